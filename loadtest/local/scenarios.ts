// The four k6 scenarios (loadtest/*.js), same shapes, defaults and variables, driven from Node:
// the buyers through autocannon (load.ts), the admin loops (reshard, restock) with fetch.
import { setTimeout as sleep } from 'node:timers/promises';
import { buyers, herd, percentile, type Recorder, type Segment } from './load.ts';
import type { Vars } from './options.ts';
import { adminCall, type Target } from './target.ts';
import type { Check } from './verify.ts';

export interface Sizing {
  stock: number;
  shards: number;
}

export interface RunContext {
  target: Target;
  vars: Vars;
  productId: string;
  runId: string;
  stock: number;
  idempotency: boolean;
  connections: number | undefined;
  signal: AbortSignal;
  /** A Recorder for a phase of buyers (all phases share the run's clock). */
  recorder(name: string): Recorder;
}

export interface ScenarioResult {
  phases: Recorder[];
  /** Units put on sale over the run: stock plus the restocks that answered 200. */
  totalPutOnSale: number;
  soldOut?: boolean;
  checks: Check[];
  /** Latency and pacing bounds of the k6 thresholds: enforced with --thresholds, else reported. */
  thresholds: Check[];
  lines: string[];
}

export interface Scenario {
  /** Product id prefix of the k6 script (lt-<prefix>-...). */
  prefix: string;
  sizing(vars: Vars): Sizing;
  /** Seconds of load the run plans (for the overall time bound). */
  plannedSec(vars: Vars): number;
  run(ctx: RunContext): Promise<ScenarioResult>;
}

const fmt = (ms: number | undefined) => (ms === undefined ? '-' : `${ms.toFixed(1)}ms`);

function buyerOptions(ctx: RunContext, phase: string) {
  return {
    baseUrl: ctx.target.baseUrl,
    productId: ctx.productId,
    userPrefix: `${ctx.runId}-${phase}`,
    idempotency: ctx.idempotency,
    connections: ctx.connections,
    signal: ctx.signal,
  };
}

function herdOf(vars: Vars, rateDefault: number, durationDefault: string): Segment[] {
  return herd(
    vars.int('RATE', rateDefault),
    vars.duration('RAMP', '5s'),
    vars.duration('DURATION', durationDefault),
  );
}
const seconds = (segments: Segment[]) => segments.reduce((sum, s) => sum + s.seconds, 0);

// ---------------------------------------------------------------------------------------------

export const flashSale: Scenario = {
  prefix: 'flash-sale',
  sizing: (v) => ({ stock: v.int('STOCK', 10000), shards: v.int('SHARDS', 8) }),
  plannedSec: (v) => seconds(herdOf(v, 1000, '30s')),
  async run(ctx) {
    const rec = ctx.recorder('buyers');
    await buyers(herdOf(ctx.vars, 1000, '30s'), buyerOptions(ctx, 'buyers'), rec);
    return { phases: [rec], totalPutOnSale: ctx.stock, checks: [], thresholds: [], lines: [] };
  },
};

// ---------------------------------------------------------------------------------------------

export const reshardUnderLoad: Scenario = {
  prefix: 'reshard',
  sizing: (v) => ({ stock: v.int('STOCK', 25000), shards: v.int('SHARDS', 8) }),
  plannedSec: (v) => seconds(herdOf(v, 500, '60s')),
  async run(ctx) {
    const { vars } = ctx;
    const segments = herdOf(vars, 500, '60s');
    const everySec = vars.duration('RESHARD_EVERY', 3);
    const maxShards = vars.int('MAX_SHARDS', 16);
    const rec = ctx.recorder('buyers');
    const herdSec = seconds(segments);
    const reshards: { ok: boolean; ms: number }[] = [];
    const problems: string[] = [];
    let skipped = 0;

    // One reshard at a time, one every RESHARD_EVERY for the herd's length (k6: one admin VU at a
    // constant arrival rate; a reshard slower than the interval costs the ticks it overlaps).
    const admin = (async () => {
      let lastGeneration = -1;
      let lastAvailable = Number.POSITIVE_INFINITY;
      const start = performance.now();
      for (let tick = 0; tick * everySec < herdSec; tick++) {
        const at = start + tick * everySec * 1000;
        const wait = at - performance.now();
        if (wait < 0 && tick > 0) {
          skipped++;
          continue;
        }
        if (wait > 0) await sleep(wait, undefined, { signal: ctx.signal }).catch(() => {});
        if (ctx.signal.aborted) return;
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
        reshards.push({ ok, ms: r.ms });
        if (!ok && problems.length < 5)
          problems.push(`reshard to ${shards} answered ${r.status}: ${r.text.slice(0, 300)}`);
        if (typeof b.generation === 'number') lastGeneration = b.generation;
        if (typeof b.available === 'number') lastAvailable = b.available;
      }
    })();
    await Promise.all([buyers(segments, buyerOptions(ctx, 'buyers'), rec), admin]);

    const sorted = reshards.map((r) => r.ms).sort((a, b) => a - b);
    const p95 = percentile(sorted, 95);
    const failed = reshards.filter((r) => !r.ok).length;
    const p95Bound = vars.number('RESHARD_P95_MS', 2000);
    return {
      phases: [rec],
      totalPutOnSale: ctx.stock,
      checks: [
        { name: 'resharding ran under load (at least one reshard)', ok: reshards.length > 0 },
        {
          name: 'every reshard: 200, requested shard count, newer generation, available never grows',
          ok: failed === 0,
          detail: failed ? `${failed} of ${reshards.length} failed: ${problems.join(' | ')}` : undefined,
        },
      ],
      thresholds: [
        { name: `reshard p95 < ${p95Bound}ms`, ok: p95 !== undefined && p95 < p95Bound, detail: fmt(p95) },
      ],
      lines: [
        `  resharding: ${reshards.length} reshards (${failed} failed, ${skipped} ticks skipped)  p95 ${fmt(p95)}  max ${fmt(sorted.at(-1))}`,
      ],
    };
  },
};

// ---------------------------------------------------------------------------------------------

export const soldOutStorm: Scenario = {
  prefix: 'storm',
  sizing: (v) => ({ stock: v.int('STOCK', 100), shards: v.int('SHARDS', 4) }),
  plannedSec: (v) => v.duration('RUSH_DURATION', '10s') + 2 + seconds(herdOf(v, 2000, '30s')),
  async run(ctx) {
    const { vars } = ctx;
    const rushRate = vars.int('RUSH_RATE', 500);
    const rushSec = vars.duration('RUSH_DURATION', '10s');
    const minSoldOutRate = vars.number('MIN_SOLD_OUT_RATE', 0.99);
    const p95Bound = vars.number('SOLDOUT_P95_MS', 50);
    const p99Bound = vars.number('SOLDOUT_P99_MS', 100);
    const lines: string[] = [];
    if (rushRate * rushSec < 2 * ctx.stock) {
      lines.push(
        '  warning: RUSH_RATE x RUSH_DURATION is under twice STOCK: the rush may not sell out before the storm',
      );
    }
    const rush = ctx.recorder('rush');
    const storm = ctx.recorder('storm');
    const started = performance.now();
    await buyers([{ rate: rushRate, seconds: rushSec }], buyerOptions(ctx, 'rush'), rush);
    // The storm starts 2 s after the rush was due to end, so it meets a settled sold-out state.
    const gap = started + (rushSec + 2) * 1000 - performance.now();
    if (gap > 0) await sleep(gap, undefined, { signal: ctx.signal }).catch(() => {});
    await buyers(herdOf(vars, 2000, '30s'), buyerOptions(ctx, 'storm'), storm);

    const stormShare = storm.answered ? storm.outcomes.sold_out / storm.answered : 0;
    const s409 = [...storm.soldOutMs].sort((a, b) => a - b);
    const p95 = percentile(s409, 95);
    const p99 = percentile(s409, 99);
    lines.push(
      `  storm (after sell-out): sold_out answers ${(stormShare * 100).toFixed(2)}%   409 latency p95 ${fmt(p95)}  p99 ${fmt(p99)}`,
    );
    return {
      phases: [rush, storm],
      totalPutOnSale: ctx.stock,
      soldOut: true,
      checks: [
        {
          name: `storm answers are sold_out (>= ${minSoldOutRate * 100}%)`,
          ok: stormShare >= minSoldOutRate,
          detail: `${(stormShare * 100).toFixed(2)}%`,
        },
      ],
      thresholds: [
        { name: `storm 409 p95 < ${p95Bound}ms`, ok: p95 !== undefined && p95 < p95Bound, detail: fmt(p95) },
        { name: `storm 409 p99 < ${p99Bound}ms`, ok: p99 !== undefined && p99 < p99Bound, detail: fmt(p99) },
      ],
      lines,
    };
  },
};

// ---------------------------------------------------------------------------------------------

export const soak: Scenario = {
  prefix: 'soak',
  sizing: (v) => ({ stock: v.int('STOCK', v.int('RATE', 100) * 60), shards: v.int('SHARDS', 8) }),
  plannedSec: (v) => v.duration('DURATION', '30m'),
  async run(ctx) {
    const { vars } = ctx;
    const rate = vars.int('RATE', 100);
    const durationSec = vars.duration('DURATION', '30m');
    const everySec = vars.duration('RESTOCK_EVERY', '60s');
    const delta = vars.int('RESTOCK', Math.ceil((rate * everySec) / 2));
    const windowSec = vars.number('PHASE_WINDOW', Math.min(300, durationSec / 4));
    const p99Bound = vars.number('P99_MS', 500);
    const lateP99Bound = vars.number('LATE_P99_MS', p99Bound);
    const maxDrift = vars.number('MAX_DRIFT', 1.5);
    const minBaseline = vars.int('MIN_BASELINE', 50);
    if (windowSec * 2 > durationSec) throw new Error('PHASE_WINDOW must be at most half of DURATION');

    const rec = ctx.recorder('buyers');
    let restocks = 0;
    let restocksOk = 0;
    const problems: string[] = [];
    const t0 = performance.now();
    const startAt = Date.now() - rec.epoch;
    // Restocks one interval in, then every interval, while the buyers run (k6: ceil((D - T) / T)).
    const restocker = (async () => {
      for (let k = 1; k * everySec < durationSec; k++) {
        const wait = t0 + k * everySec * 1000 - performance.now();
        if (wait > 0) await sleep(wait, undefined, { signal: ctx.signal }).catch(() => {});
        if (ctx.signal.aborted) return;
        const r = await adminCall(ctx.target, 'POST', `/admin/products/${ctx.productId}/restock`, { delta });
        restocks++;
        if (r.status === 200) restocksOk++;
        else if (problems.length < 5) problems.push(`restock answered ${r.status}: ${r.text.slice(0, 300)}`);
      }
    })();
    await Promise.all([
      buyers([{ rate, seconds: durationSec }], buyerOptions(ctx, 'buyers'), rec),
      restocker,
    ]);

    // Drift: p99 of 202s in the first and in the last window of the run (by arrival time).
    const early: number[] = [];
    const late: number[] = [];
    rec.acceptedAt.forEach((at, i) => {
      const t = (at - startAt) / 1000;
      const ms = rec.acceptedMs[i] as number;
      if (t < windowSec) early.push(ms);
      else if (t >= durationSec - windowSec) late.push(ms);
    });
    const p99 = (xs: number[]) =>
      percentile(
        [...xs].sort((a, b) => a - b),
        99,
      );
    const earlyP99 = p99(early);
    const lateP99 = p99(late);
    const judged = early.length >= minBaseline && earlyP99 !== undefined && lateP99 !== undefined;
    const ratio = judged ? (lateP99 as number) / (earlyP99 as number) : undefined;
    return {
      phases: [rec],
      totalPutOnSale: ctx.stock + restocksOk * delta,
      checks: [
        {
          name: 'every restock answered 200',
          ok: restocksOk === restocks,
          detail: problems.length ? problems.join(' | ') : undefined,
        },
      ],
      thresholds: [
        {
          name: `early p99 of 202s < ${p99Bound}ms`,
          ok: earlyP99 !== undefined && earlyP99 < p99Bound,
          detail: fmt(earlyP99),
        },
        {
          name: `late p99 of 202s < ${lateP99Bound}ms`,
          ok: lateP99 !== undefined && lateP99 < lateP99Bound,
          detail: fmt(lateP99),
        },
        {
          name: `drift: late p99 <= ${maxDrift} x early p99`,
          ok: !judged || (ratio as number) <= maxDrift,
          detail: judged
            ? `ratio ${(ratio as number).toFixed(2)}`
            : `not judged: ${early.length} early 202s < MIN_BASELINE ${minBaseline}`,
        },
      ],
      lines: [
        `  drift (first vs last ${Math.round(windowSec)}s): p99 of 202s early ${fmt(earlyP99)} (${early.length})  late ${fmt(lateP99)} (${late.length})  ratio ${ratio === undefined ? '-' : ratio.toFixed(2)}`,
        `  restocks: ${restocksOk} of ${restocks} x ${delta}`,
      ],
    };
  },
};

export const SCENARIOS: Record<string, Scenario> = {
  'flash-sale': flashSale,
  'reshard-under-load': reshardUnderLoad,
  'sold-out-storm': soldOutStorm,
  soak,
};
