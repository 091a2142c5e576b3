// Phase 2b, a step of the suite: the real path from 8 shards in four slices c8s1 c8rs1 c8rs2 c8s2,
// the c8rs ones while an admin loop reshards their product every 2 s; its report and targets.
import { admin } from '../../harness/service.ts';
import { ratio } from '../lib/stats.ts';
import { type Check, ms, num, times } from '../lib/table.ts';
import type { BenchRun } from './bench-run.ts';
import { info } from './judge.ts';
import type { LoadResult } from './load.ts';
import { TARGETS } from './options.ts';
import { analyseReshard, type ReshardAnalysis, runReshardLoop, type Slice } from './reshard.ts';
import { printReshard } from './reshard-report.ts';
import { realPath } from './rounds.ts';
import { runScenario, type ScenarioResult } from './scenario.ts';
import { metric, statusText } from './service-metrics.ts';

export interface LiveReshard {
  slices: Slice[];
  analysis: ReshardAnalysis;
  /** The service's own timing of its reshards (admin change histogram). */
  service: { count: number; meanMs: number };
}

const CHANGE = 'flashsale_admin_change_duration_seconds';
const KIND = 'kind="reshard"';

const emptySlice = (key: string, seconds: number): Slice => ({
  key,
  resharding: key.startsWith('c8rs'),
  seconds,
  ok: 0,
  latencies: new Float64Array(0),
  timeline: { start: new Float64Array(0), end: new Float64Array(0), status: new Uint16Array(0) },
  startedAt: Number.NaN,
  calls: [],
  other: '',
});

/** One slice: every order's [sent, answered] interval recorded, the reshard loop beside it if c8rs. */
async function runSlice(
  bench: BenchRun,
  url: string,
  slice: Slice,
  cycle: number[],
): Promise<ScenarioResult> {
  const { everyMs, firstMs } = bench.options.reshard;
  const productId = `bench-${slice.key}`;
  const label = `real path, 8 shards, ${slice.resharding ? `reshard every ${everyMs / 1000} s` : 'no reshard'}`;
  const r = await runScenario(bench, {
    ...realPath(slice.key, label, [url], productId),
    seconds: slice.seconds,
    timeline: true,
    during: async (load) => {
      slice.startedAt = load.startedAt;
      if (!slice.resharding) return;
      slice.calls = await runReshardLoop({
        url,
        productId,
        headers: admin,
        from: 8,
        cycle,
        firstAt: load.startedAt + firstMs,
        everyMs,
        // Leave each reshard a second inside the window, so that its effect is measured.
        lastStartBy: load.deadline - 1_000,
      });
    },
    inspect: (l: LoadResult) => {
      Object.assign(slice, { ok: l.ok, seconds: l.seconds, latencies: l.latencies });
      if (l.timeline) slice.timeline = l.timeline;
    },
  });
  slice.other = statusText(r.statuses, 202);
  const failed = slice.calls.filter((c) => c.error);
  if (slice.resharding)
    bench.log(
      `         ${slice.calls.length} reshards, admin calls ${slice.calls.map((c) => ms(c.end - c.start)).join(', ')} ms` +
        (failed.length ? `; ${failed.length} FAILED: ${failed.map((c) => c.error).join(' | ')}` : ''),
    );
  return r;
}

/** bench/order/reshard.ts explains the ABBA order and how an order's wait is put down to a reshard. */
export async function liveReshard(
  bench: BenchRun,
  url: string,
): Promise<{ results: ScenarioResult[]; live: LiveReshard }> {
  const { seconds, everyMs, firstMs, cycles } = bench.options.reshard;
  bench.log(
    `phase 2b: live reshard, ${seconds} s slices without (c8s) and with (c8rs) a reshard every ${everyMs / 1000} s`,
  );
  const countBefore = await metric(url, `${CHANGE}_count`, KIND);
  const sumBefore = await metric(url, `${CHANGE}_sum`, KIND);
  const slices: Slice[] = [];
  const results: ScenarioResult[] = [];
  for (const key of ['c8s1', 'c8rs1', 'c8rs2', 'c8s2']) {
    const slice = emptySlice(key, seconds);
    const cycle = cycles[slices.filter((x) => x.resharding).length % cycles.length] ?? [];
    results.push(await runSlice(bench, url, slice, cycle));
    slices.push(slice);
  }
  const count = (await metric(url, `${CHANGE}_count`, KIND)) - countBefore;
  const sum = (await metric(url, `${CHANGE}_sum`, KIND)) - sumBefore;
  const analysis = analyseReshard(slices, firstMs);
  bench.log(
    `         with/without ${times(ratio(analysis.with.perSecond, analysis.without.perSecond))} orders/s; ` +
      `longest order overlapping a reshard ${ms(analysis.overlapping.max)} ms, other orders ${ms(analysis.outside.max)} ms`,
  );
  const service = { count, meanMs: count > 0 ? (sum / count) * 1000 : Number.NaN };
  return { results, live: { slices, analysis, service } };
}

/** Prints the live-reshard section; returns its target checks and reported figures. */
export function reportReshard(
  r: LiveReshard,
  o: { connections: number; everyMs: number; firstMs: number },
): { checks: Check[]; reported: Check[] } {
  const a = r.analysis;
  printReshard(a, r.slices, { ...o, service: r.service });
  const throughput = ratio(a.with.perSecond, a.without.perSecond);
  const completed = a.calls.filter((c) => c.status === 200 && !c.error).length;
  const pairs = a.pairs.map((p) => times(p.ratio)).join(', ');
  const checks: Check[] = [
    {
      name: `c8rs/c8s (orders/s, reshard every ${o.everyMs / 1000} s / none) >= ${TARGETS.reshard.toFixed(2)}`,
      pass: Number.isFinite(throughput) && throughput >= TARGETS.reshard,
      detail: `${times(throughput, 3)}  ${num(a.with.perSecond)} / ${num(a.without.perSecond)} (pairs ${pairs})`,
    },
    {
      name: `reshards completed under load >= ${TARGETS.reshardCount}, none failed`,
      pass: completed >= TARGETS.reshardCount && completed === a.calls.length,
      detail: `${completed} of ${a.calls.length} answered 200`,
    },
  ];
  const p99 = ratio(a.without.latency.p99, a.with.latency.p99);
  const reported: Check[] = [
    info(
      'p99 c8s/c8rs (p99 without ÷ with reshard)',
      p99,
      `${ms(a.without.latency.p99)} / ${ms(a.with.latency.p99)} ms`,
    ),
    {
      name: 'reshard admin call p50 / max',
      pass: true,
      detail: `${ms(a.callMs.p50)} / ${ms(a.callMs.max)} ms`,
    },
    {
      name: 'longest order overlapping a reshard / not',
      pass: true,
      detail: `${ms(a.overlapping.max)} / ${ms(a.outside.max)} ms (c8s: ${ms(a.without.settled.max)} ms)`,
    },
  ];
  return { checks, reported };
}

/** The section of .bench/orders.json. */
export function reshardJson(r: LiveReshard, o: { seconds: number; everyMs: number }) {
  const a = r.analysis;
  return {
    secondsPerSlice: o.seconds,
    everyMs: o.everyMs,
    slices: r.slices.map((x) => x.key),
    without: a.without,
    with: a.with,
    pairs: a.pairs,
    calls: a.calls,
    callMs: a.callMs,
    serviceChange: r.service,
    overlapping: { latencyMs: a.overlapping, statuses: a.overlappingStatuses },
    outside: { latencyMs: a.outside },
  };
}
