// The reshard-under-load scenario (loadtest/reshard-under-load.js from Node): the herd of buyers,
// and beside it one admin reshard every RESHARD_EVERY to a random shard count, each one checked.
import { buyers, percentile } from './load.ts';
import {
  buyerOptions,
  fmt,
  herdOf,
  onSchedule,
  type RunContext,
  type Scenario,
  seconds,
} from './scenario.ts';
import { adminCall } from './target.ts';

interface Reshards {
  done: { ok: boolean; ms: number }[];
  problems: string[];
  skipped: number;
}

/**
 * One reshard at a time, one every RESHARD_EVERY for the herd's length (k6: one admin VU at a
 * constant arrival rate); each must answer 200 with the shard count asked for, a newer generation
 * and no more units available than before.
 */
async function reshardLoop(ctx: RunContext, herdSec: number): Promise<Reshards> {
  const out: Reshards = { done: [], problems: [], skipped: 0 };
  const maxShards = ctx.vars.int('MAX_SHARDS', 16);
  let lastGeneration = -1;
  let lastAvailable = Number.POSITIVE_INFINITY;
  const everySec = ctx.vars.duration('RESHARD_EVERY', 3);
  const schedule = { first: 0, everySec, untilSec: herdSec, skipLate: true, signal: ctx.signal };
  out.skipped = await onSchedule(schedule, async () => {
    const shards = 1 + Math.floor(Math.random() * maxShards);
    const r = await adminCall(ctx.target, 'POST', `/admin/products/${ctx.productId}/reshard`, { shards });
    const b = r.body ?? {};
    const ok =
      r.status === 200 &&
      b.shards === shards &&
      typeof b.generation === 'number' &&
      b.generation > lastGeneration &&
      typeof b.available === 'number' &&
      b.available >= 0 &&
      b.available <= Math.min(lastAvailable, ctx.stock);
    out.done.push({ ok, ms: r.ms });
    if (!ok && out.problems.length < 5)
      out.problems.push(`reshard to ${shards} answered ${r.status}: ${r.text.slice(0, 300)}`);
    if (typeof b.generation === 'number') lastGeneration = b.generation;
    if (typeof b.available === 'number') lastAvailable = b.available;
  });
  return out;
}

export const reshardUnderLoad: Scenario = {
  prefix: 'reshard',
  sizing: (v) => ({ stock: v.int('STOCK', 25000), shards: v.int('SHARDS', 8) }),
  plannedSec: (v) => seconds(herdOf(v, 500, '60s')),
  async run(ctx) {
    const segments = herdOf(ctx.vars, 500, '60s');
    const rec = ctx.recorder('buyers');
    const [, reshards] = await Promise.all([
      buyers(segments, buyerOptions(ctx, 'buyers'), rec),
      reshardLoop(ctx, seconds(segments)),
    ]);
    const { done, problems, skipped } = reshards;
    const sorted = done.map((r) => r.ms).sort((a, b) => a - b);
    const p95 = percentile(sorted, 95);
    const failed = done.filter((r) => !r.ok).length;
    const p95Bound = ctx.vars.number('RESHARD_P95_MS', 2000);
    return {
      phases: [rec],
      totalPutOnSale: ctx.stock,
      checks: [
        { name: 'resharding ran under load (at least one reshard)', ok: done.length > 0 },
        {
          name: 'every reshard: 200, requested shard count, newer generation, available never grows',
          ok: failed === 0,
          detail: failed ? `${failed} of ${done.length} failed: ${problems.join(' | ')}` : undefined,
        },
      ],
      thresholds: [
        { name: `reshard p95 < ${p95Bound}ms`, ok: p95 !== undefined && p95 < p95Bound, detail: fmt(p95) },
      ],
      lines: [
        `  resharding: ${done.length} reshards (${failed} failed, ${skipped} ticks skipped)  p95 ${fmt(p95)}  max ${fmt(sorted.at(-1))}`,
      ],
    };
  },
};
