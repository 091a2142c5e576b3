// API CPU per herd answer, for the herd phase: `queued`, `sold_out` and the bare 202 of
// POST /bench/bare (validation and a same-shaped answer, no Redis), each a closed-model load on the
// same API process, in interleaved rounds, medians reported: the machine's drift cancels out.
//
// A queued answer needs a line that never lets the load in: the bench writes one straight into the
// line's Redis hash (src/waiting-room/scripts/sync.lua's layout), a backlog no spare capacity drains.
import { setTimeout as sleep } from 'node:timers/promises';
import type { Redis } from 'ioredis';
import type { Spawned } from '../../harness/service.ts';
import { lineKey } from '../../src/waiting-room/keys.ts';
import { summarize } from '../lib/stats.ts';
import { treeCpuSeconds } from './cpu.ts';
import { startLoad } from './load.ts';

export interface AnswerCost {
  /** Median API CPU µs per answer, by kind. */
  queued: number;
  soldOut: number;
  bare: number;
  rounds: number;
}

/** The waiting room's bucket width (WaitingRoom's default bucketMs). */
const BUCKET_MS = 20;
/** Buyers the fake backlog holds: idle capacity (about `limit` a second) never drains it in a run. */
const BACKLOG = 100_000_000;
const ROUNDS = 3;
const SECONDS = 2;

/** A line for `productId` with a backlog ahead of anyone arriving now, on Redis' clock. */
export async function blockLine(redis: Redis, productId: string): Promise<void> {
  const [sec, usec] = await redis.time();
  const now = Number(sec) * 1000 + Math.floor(Number(usec) / 1000);
  const bucket = Math.floor(now / BUCKET_MS) - 1;
  await redis.hset(lineKey(productId), { cur: bucket, used: 0, rate: 0, at: now, [`b${bucket}`]: BACKLOG });
  await redis.expire(lineKey(productId), 600);
}

/** API CPU µs per answer of one closed-model load of `path` for `productId` (its answers all `status`). */
async function costOf(api: Spawned, path: string, productId: string, status: number): Promise<number> {
  const before = treeCpuSeconds(api.proc.pid);
  const r = await startLoad({
    targets: [{ url: api.url, path }],
    productId,
    userPrefix: `cost-${status}`,
    connections: 50,
    seconds: SECONDS,
    expectStatus: status,
  }).done;
  const cpu = treeCpuSeconds(api.proc.pid) - before;
  // Another answer than the one measured (the line let someone in, a shed refusal): no figure.
  if (r.unexpected > 0) return Number.NaN;
  return (cpu * 1e6) / Math.max(1, r.realAnswered + r.tailAnswered);
}

/**
 * Measures on `api` (WAITING_ROOM=on, BENCH_ENDPOINTS=1). `sale` creates a product; `sell` places one
 * order (the sold-out product's only unit). The bare 202s create no order; the others sell nothing.
 */
export async function answerCost(
  api: Spawned,
  redis: Redis,
  sale: (productId: string, stock: number) => Promise<void>,
  sell: (productId: string) => Promise<void>,
): Promise<AnswerCost> {
  const id = Date.now().toString(36);
  const [queuedId, soldOutId, bareId] = [`cost-q-${id}`, `cost-s-${id}`, `cost-b-${id}`];
  await sale(queuedId, 1000);
  await sale(soldOutId, 1);
  await sale(bareId, 1000);
  await sell(soldOutId);
  const samples = { queued: [] as number[], soldOut: [] as number[], bare: [] as number[] };
  for (let round = 0; round < ROUNDS; round++) {
    samples.bare.push(await costOf(api, '/bench/bare', bareId, 202));
    await blockLine(redis, queuedId);
    // The process reads the line back within a tick (100 ms) of its next order for it.
    await sleep(300);
    samples.queued.push(await costOf(api, '/api/orders', queuedId, 429));
    samples.soldOut.push(await costOf(api, '/api/orders', soldOutId, 409));
  }
  const median = (xs: number[]) => summarize(xs.filter(Number.isFinite)).p50;
  return {
    queued: median(samples.queued),
    soldOut: median(samples.soldOut),
    bare: median(samples.bare),
    rounds: ROUNDS,
  };
}
