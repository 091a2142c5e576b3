// The four k6 scenarios (loadtest/*.js), same shapes, defaults and variables, driven from Node:
// flash-sale and sold-out-storm here, reshard-under-load and soak in modules of their own.
import { setTimeout as sleep } from 'node:timers/promises';
import { buyers, percentile } from './load.ts';
import { reshardUnderLoad } from './reshard-under-load.ts';
import { buyerOptions, fmt, herdOf, type Scenario, seconds } from './scenario.ts';
import { soak } from './soak.ts';

export type { RunContext, Scenario, ScenarioResult, Sizing } from './scenario.ts';

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

export const SCENARIOS: Record<string, Scenario> = {
  'flash-sale': flashSale,
  'reshard-under-load': reshardUnderLoad,
  'sold-out-storm': soldOutStorm,
  soak,
};
