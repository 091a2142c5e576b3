// The end-of-run checks: the k6 scripts' teardown (loadtest/lib.js verifyInvariants) on the
// server's own numbers after the writer drained, plus what only this runner sees exactly: every
// 202 it counted is one row in Postgres, and no answer fell outside the contract.
import { setTimeout as sleep } from 'node:timers/promises';
import { adminCall, type Target } from './target.ts';

export interface Check {
  name: string;
  ok: boolean;
  /** Shown after the name when the check failed (or always, for context). */
  detail?: string;
}

export interface AdminState {
  available: number;
  sold: number;
  reserved: number;
  confirmed: number;
  total: number;
  generation: number;
  shards: { index: number; key: string; stock: number }[];
}

export interface ServerView {
  state: AdminState | null;
  drained: boolean;
  waitedSec: number;
  reconcile: { status: number; body: { ok?: boolean; differences?: unknown[] } | undefined };
}

/** Polls the admin view until no reservation is left (the writer persisted every order). */
export async function waitForDrain(t: Target, productId: string, timeoutSec: number): Promise<ServerView> {
  const started = Date.now();
  const deadline = started + timeoutSec * 1000;
  let state: AdminState | null = null;
  let drained = false;
  while (Date.now() < deadline) {
    const r = await adminCall(t, 'GET', `/admin/products/${productId}`);
    state = r.status === 200 ? (r.body as AdminState) : null;
    if (state !== null && state.reserved === 0) {
      drained = true;
      break;
    }
    await sleep(500);
  }
  const rec = await adminCall(t, 'GET', `/admin/products/${productId}/reconcile`);
  return {
    state,
    drained,
    waitedSec: (Date.now() - started) / 1000,
    reconcile: { status: rec.status, body: rec.body as ServerView['reconcile']['body'] },
  };
}

export interface Expectations {
  /** Units put on sale over the run (stock plus successful restocks). */
  total: number;
  /** Every unit must be sold by the end (sold-out storm). */
  soldOut?: boolean;
  drainTimeoutSec: number;
}

/** The server-side invariants of DESIGN.md §5, as loadtest/lib.js verifyInvariants checks them. */
export function serverChecks(view: ServerView, expect: Expectations): Check[] {
  const s = (view.state ?? {}) as Partial<AdminState>;
  const numeric = (['available', 'sold', 'reserved', 'confirmed', 'total'] as const).every(
    (k) => typeof s[k] === 'number',
  );
  const { available = Number.NaN, sold = Number.NaN, reserved = Number.NaN } = s;
  const { confirmed = Number.NaN, total = Number.NaN } = s;
  const shardSum = Array.isArray(s.shards) ? s.shards.reduce((sum, x) => sum + x.stock, 0) : Number.NaN;
  const rec = view.reconcile;
  const checks: Check[] = [
    { name: 'admin view answers with available/sold/reserved/confirmed/total', ok: numeric },
    { name: `writer drained within ${expect.drainTimeoutSec}s (reserved == 0)`, ok: view.drained },
    { name: 'no oversell: sold <= total', ok: sold <= total && available >= 0 },
    { name: 'nothing lost: confirmed == sold after drain', ok: confirmed === sold },
    { name: 'sold == reserved + confirmed', ok: sold === reserved + confirmed },
    { name: 'conservation: available + sold == total', ok: available + sold === total },
    { name: 'shards hold exactly the available stock', ok: shardSum === available },
    {
      name: 'reconcile: Redis and Postgres agree (ok == true)',
      ok: rec.status === 200 && rec.body?.ok === true,
      detail: rec.body?.differences?.length ? JSON.stringify(rec.body.differences).slice(0, 1000) : undefined,
    },
    { name: `total == ${expect.total} (stock put on sale)`, ok: total === expect.total },
  ];
  if (expect.soldOut) {
    checks.push({
      name: 'sold out for real: available == 0 (no unit left behind a sold_out answer)',
      ok: available === 0,
    });
  }
  return checks;
}

export function describeState(view: ServerView): string {
  const s = view.state;
  return s
    ? `total ${s.total}  available ${s.available}  sold ${s.sold}  reserved ${s.reserved}  confirmed ${s.confirmed}  generation ${s.generation}  shards ${s.shards.length}`
    : 'admin view unavailable';
}
