// Invariants after a load run (DESIGN.md §5), from outside the service: the client's count of 202s
// against Postgres rows and the sale's own reconcile (available + sold == total, sold == reserved +
// confirmed), plus the writer's progress while and after the load ran.
import { setTimeout as sleep } from 'node:timers/promises';
import type { Redis } from 'ioredis';
import { admin, call } from '../../harness/service.ts';
import { shardKeys } from '../../src/inventory/keys.ts';
import { sampleEvery } from '../lib/sampler.ts';

export interface Violation {
  scenario: string;
  check: string;
  detail: string;
}

export interface Settled {
  rows: number;
  reconcile: Record<string, unknown>;
}

/**
 * Waits until Postgres holds a row for every accepted order (or stops growing), then checks rows ==
 * accepted, sold == accepted, no oversell and the service's reconcile. `unknown` orders (sent, never
 * answered) widen rows == accepted to accepted <= rows <= accepted + unknown.
 */
export async function settleAndCheck(o: {
  scenario: string;
  url: string;
  productId: string;
  accepted: number;
  unknown: number;
  rows: (productId: string) => Promise<number>;
  timeoutMs?: number;
}): Promise<{ settled: Settled; violations: Violation[] }> {
  const violations: Violation[] = [];
  const fail = (check: string, detail: string) => violations.push({ scenario: o.scenario, check, detail });
  const timeoutMs = o.timeoutMs ?? 120_000;
  const deadline = performance.now() + timeoutMs;
  let rows = await o.rows(o.productId);
  let lastGrowth = performance.now();
  for (;;) {
    if (rows >= o.accepted) break;
    if (performance.now() > deadline || performance.now() - lastGrowth > 15_000) break;
    await sleep(50);
    const now = await o.rows(o.productId);
    if (now > rows) lastGrowth = performance.now();
    rows = now;
  }
  // A server-side accept the client did not see would show up as extra rows: give it a moment.
  await sleep(200);
  rows = await o.rows(o.productId);
  if (o.unknown === 0 ? rows !== o.accepted : rows < o.accepted || rows > o.accepted + o.unknown) {
    fail(
      'rows == accepted',
      `rows ${rows}, accepted (client-side 2xx) ${o.accepted}${o.unknown ? `, unknown ${o.unknown}` : ''}`,
    );
  }
  const r = await call(o.url, 'GET', `/admin/products/${o.productId}/reconcile`, undefined, admin);
  const body = r.body;
  if (r.status !== 200 || body.ok !== true) {
    fail('reconcile ok', `${r.status} ${JSON.stringify(body.differences ?? body)}`);
  }
  const { available, sold, total, reserved, confirmed } = body as Record<string, number>;
  if (sold !== undefined && (o.unknown === 0 ? sold !== o.accepted : sold < o.accepted)) {
    fail('sold == accepted', `sold ${sold}, accepted ${o.accepted}`);
  }
  if (available !== undefined && sold !== undefined && total !== undefined) {
    if (available + sold !== total) fail('available + sold == total', `${available} + ${sold} != ${total}`);
    if (sold > total) fail('no oversell', `sold ${sold} > total ${total}`);
  }
  if (reserved !== 0) fail('drained (reserved == 0)', `reserved ${reserved}, confirmed ${confirmed}`);
  return { settled: { rows, reconcile: body }, violations };
}

/**
 * For the lock-free endpoint without enqueue: its orders stay reservations (no row). Checks straight
 * in Redis that sold == accepted == reservations and available + sold == total, then deletes the
 * reservations so the outbox sweeper does not persist them during later scenarios.
 */
export async function checkReservationsOnly(o: {
  scenario: string;
  redis: Redis;
  productId: string;
  accepted: number;
  unknown: number;
}): Promise<Violation[]> {
  const violations: Violation[] = [];
  const fail = (check: string, detail: string) => violations.push({ scenario: o.scenario, check, detail });
  const shards = await o.redis.lrange(`sale:{${o.productId}}:shards`, 0, -1);
  const total = Number(await o.redis.hget(`sale:{${o.productId}}`, 'total'));
  const p = o.redis.pipeline();
  for (const key of shards) {
    const k = shardKeys(key);
    p.get(k.stock).get(k.sold).hlen(k.reservations);
  }
  const replies = ((await p.exec()) ?? []).map(([err, v]) => {
    if (err) throw err;
    return Number(v ?? 0);
  });
  let available = 0;
  let sold = 0;
  let reservations = 0;
  for (let i = 0; i < shards.length; i++) {
    available += replies[i * 3] ?? 0;
    sold += replies[i * 3 + 1] ?? 0;
    reservations += replies[i * 3 + 2] ?? 0;
  }
  const exact = o.unknown === 0;
  if (exact ? sold !== o.accepted : sold < o.accepted || sold > o.accepted + o.unknown)
    fail('sold == accepted', `sold ${sold}, accepted ${o.accepted}`);
  if (reservations !== sold) fail('reservations == sold', `reservations ${reservations}, sold ${sold}`);
  if (available + sold !== total) fail('available + sold == total', `${available} + ${sold} != ${total}`);
  if (sold > total) fail('no oversell', `sold ${sold} > total ${total}`);
  await o.redis.del(...shards.map((key) => shardKeys(key).reservations));
  return violations;
}

export interface WriterSample {
  /** performance.now() */
  t: number;
  accepted: number;
  rows: number;
}

/** Samples (client-side accepted, Postgres rows) every intervalMs until stopped. */
export function sampleWriter(
  productId: string,
  accepted: () => number,
  rows: (productId: string) => Promise<number>,
  intervalMs = 100,
): { stop(): Promise<WriterSample[]> } {
  return sampleEvery(intervalMs, async () => {
    const a = accepted();
    const n = await rows(productId);
    return { t: performance.now(), accepted: a, rows: n };
  });
}

export interface WriterStats {
  acceptedPerSecond: number;
  rowsPerSecond: number;
  /** rows/s ÷ accepted/s over the same interval (the window minus its first 0.5 s). */
  ratio: number;
  /** Accepted without a row yet at the end of the window. */
  backlogAtEnd: number;
  /** rows/s from the end of the window until drained. */
  drainRowsPerSecond: number;
  drainMs: number;
}

export function writerStats(
  samples: WriterSample[],
  startedAt: number,
  deadline: number,
  accepted: number,
): WriterStats {
  const inWindow = samples.filter((s) => s.t >= startedAt + 500 && s.t <= deadline);
  const first = inWindow[0];
  const last = inWindow[inWindow.length - 1];
  const drained = samples.find((s) => s.t >= deadline && s.rows >= accepted);
  const drainMs = drained ? drained.t - deadline : Number.NaN;
  const nan = Number.NaN;
  if (!first || !last || last.t <= first.t) {
    return {
      acceptedPerSecond: nan,
      rowsPerSecond: nan,
      ratio: nan,
      backlogAtEnd: nan,
      drainRowsPerSecond: nan,
      drainMs,
    };
  }
  const dt = (last.t - first.t) / 1000;
  const acceptedPerSecond = (last.accepted - first.accepted) / dt;
  const rowsPerSecond = (last.rows - first.rows) / dt;
  const backlogAtEnd = last.accepted - last.rows;
  const drainSeconds = drained ? (drained.t - last.t) / 1000 : nan;
  return {
    acceptedPerSecond,
    rowsPerSecond,
    ratio: acceptedPerSecond > 0 ? rowsPerSecond / acceptedPerSecond : nan,
    backlogAtEnd,
    drainRowsPerSecond: drainSeconds > 0 ? (accepted - last.rows) / drainSeconds : nan,
    drainMs,
  };
}
