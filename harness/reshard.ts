// Helpers of the reshard tests (admin.reshard-*.test.ts): admin calls, an order storm over one or
// more API processes, and the conservation check at a quiescent point (DESIGN.md §5).
import assert from 'node:assert/strict';
import type pg from 'pg';
import { admin, call, drained } from './service.ts';

export type Body = Record<string, unknown>;

export const reshard = (url: string, id: string, shards: unknown) =>
  call(url, 'POST', `/admin/products/${id}/reshard`, shards === undefined ? {} : { shards }, admin);
export const restock = (url: string, id: string, delta: number) =>
  call(url, 'POST', `/admin/products/${id}/restock`, { delta }, admin);
export const saleStatus = async (url: string, id: string) => {
  const r = await call(url, 'GET', `/admin/products/${id}`, undefined, admin);
  assert.equal(r.status, 200, JSON.stringify(r.body));
  return r.body;
};
export const reconcile = (url: string, id: string) =>
  call(url, 'GET', `/admin/products/${id}/reconcile`, undefined, admin);
export const order = (url: string, productId: string, userId: string) =>
  call(url, 'POST', '/api/orders', { productId, userId });

/** Generation an order was reserved in: order ids are `<product>.<generation>.<index>.<random>`. */
export const generationOf = (orderId: unknown) => Number(String(orderId).split('.')[1]);

/** Sum of a counter's samples whose labels include `match`, from a /metrics page. */
export async function counter(url: string, name: string, match: string): Promise<number> {
  const text = await (await fetch(`${url}/metrics`)).text();
  let sum = 0;
  for (const line of text.split('\n')) {
    if (line.startsWith(`${name}{`) && line.includes(match)) sum += Number(line.split(' ').at(-1));
  }
  return sum;
}

export async function rowIds(pool: pg.Pool, productId: string): Promise<string[]> {
  const r = await pool.query('select id from orders where product_id = $1', [productId]);
  return r.rows.map((row: { id: string }) => row.id);
}

/** Conservation at a quiescent point, from the service's own books and from Postgres. */
export async function assertConserved(pool: pg.Pool, url: string, productId: string, accepted: string[]) {
  const s = await drained(url, productId, 60_000);
  // Units of expired or cancelled orders left `sold`: on their way back (`returning`) or on sale again.
  assert.equal(
    Number(s.available) + Number(s.returning ?? 0) + Number(s.sold),
    s.total,
    `available + returning + sold != total: ${JSON.stringify(s)}`,
  );
  const returned = Number(s.returned ?? 0);
  assert.equal(s.sold, accepted.length - returned, 'sold == accepted units (1 unit per order) - returned');
  assert.equal(Number(s.confirmed) + Number(s.paid ?? 0), s.sold, 'confirmed + paid == sold');
  const ids = await rowIds(pool, productId);
  assert.equal(ids.length, accepted.length, 'rows == accepted');
  const rows = new Set(ids);
  const missing = accepted.filter((id) => !rows.has(id));
  assert.deepEqual(missing, [], 'every 202 has its row');
  assert.equal(new Set(accepted).size, accepted.length, 'no order id answered twice');
  const rec = await reconcile(url, productId);
  assert.equal(rec.status, 200);
  assert.equal(rec.body.ok, true, JSON.stringify(rec.body));
  assert.equal(s.pending, null, 'every change switched: no journal left behind');
  return s;
}

export interface Outcome {
  status: number;
  error?: string;
  orderId?: string;
  url: string;
  startedAt: number;
  finishedAt: number;
}

export interface StormOptions {
  urls: string[];
  productId: string;
  inFlight: number;
  minOrders: number;
  /** Keep ordering (past minOrders) until this is true; checked before each new order. */
  until?: (outcomes: Outcome[]) => boolean;
  maxOrders?: number;
  /** Live progress, for whoever runs alongside (an admin pacing its changes). */
  progress?: { sent: number; outcomes: Outcome[] };
  /** Order i is sent only once the promise returned here (if any) has settled. */
  gate?: (i: number) => Promise<void> | undefined;
}

/**
 * For a test that counts the 429 busy answers of a reshard: a lock wait long enough that a shard lock
 * held through a slow change on a loaded machine is waited for, not answered busy.
 */
export const RESHARD_ENV: Record<string, string> = { LOCK_WAIT_MS: '10000' };

/** `inFlight` concurrent buyers, each ordering one unit at a time, alternating over the API processes. */
export async function storm(o: StormOptions): Promise<{ outcomes: Outcome[]; ms: number }> {
  const progress = o.progress ?? { sent: 0, outcomes: [] };
  const { outcomes } = progress;
  const max = o.maxOrders ?? o.minOrders;
  const t0 = performance.now();
  await Promise.all(
    Array.from({ length: o.inFlight }, async () => {
      for (;;) {
        const sent = progress.sent;
        if (sent >= max || (sent >= o.minOrders && (o.until === undefined || o.until(outcomes)))) break;
        const i = progress.sent++;
        await o.gate?.(i);
        const url = o.urls[i % o.urls.length] as string;
        const startedAt = Date.now();
        const r = await order(url, o.productId, `u${i}`);
        outcomes.push({
          status: r.status,
          error: typeof r.body.error === 'string' ? r.body.error : undefined,
          orderId: typeof r.body.orderId === 'string' ? r.body.orderId : undefined,
          url,
          startedAt,
          finishedAt: Date.now(),
        });
      }
    }),
  );
  return { outcomes, ms: performance.now() - t0 };
}

export function tally(outcomes: Outcome[]): Record<string, number> {
  const t: Record<string, number> = {};
  for (const o of outcomes) {
    const k = `${o.status}${o.error ? ` ${o.error}` : ''}`;
    t[k] = (t[k] ?? 0) + 1;
  }
  return t;
}

export const acceptedIds = (outcomes: Outcome[]) =>
  outcomes.filter((o) => o.status === 202).map((o) => o.orderId as string);

/** Only 202, 409 sold_out and 429 busy are acceptable answers during a storm; never a 5xx. */
export function assertOnlyExpectedStatuses(outcomes: Outcome[]) {
  const t = tally(outcomes);
  const unexpected = Object.keys(t).filter((k) => !['202', '409 sold_out', '429 busy'].includes(k));
  assert.deepEqual(unexpected, [], `unexpected answers: ${JSON.stringify(t)}`);
  assert.equal(outcomes.filter((o) => o.status >= 500).length, 0, `5xx answers: ${JSON.stringify(t)}`);
}

export const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? 0;

// --- tests ---
