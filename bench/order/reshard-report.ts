// The live-reshard section of the order bench's report: each slice and the pooled arms, every admin
// call with the orders in flight during it, and the longest wait a reshard caused set against the rest.
import { ratio, type Summary, summarize } from '../lib/stats.ts';
import { ms, num, printTable, times } from '../lib/table.ts';
import {
  AFTER_MS,
  type Arm,
  type CallRow,
  latenciesFrom,
  type ReshardAnalysis,
  type Slice,
} from './reshard.ts';
import { statusText } from './service-metrics.ts';

export interface ReshardReportOptions {
  connections: number;
  everyMs: number;
  firstMs: number;
  /** The service's own time for the change (flashsale_admin_change_duration_seconds, kind reshard). */
  service: { count: number; meanMs: number };
}

interface Row {
  key: string;
  seconds: number;
  perSecond: number;
  latency: Summary;
  settled: Summary;
  reshards: string;
  other: string;
}

function printSlices(a: ReshardAnalysis, slices: Slice[], o: ReshardReportOptions): void {
  const shardPath = (s: Slice) => [8, ...s.calls.map((c) => c.to)].join('→');
  const sliceRows: Row[] = slices.map((s) => ({
    key: s.key,
    seconds: s.seconds,
    perSecond: s.ok / s.seconds,
    latency: summarize(s.latencies),
    settled: summarize(latenciesFrom(s.timeline, s.startedAt + o.firstMs)),
    reshards: s.resharding ? shardPath(s) : '-',
    other: s.other || '0',
  }));
  const armRow = (name: string, x: Arm): Row => ({
    key: `${name} (${x.slices.join('+')})`,
    seconds: x.seconds,
    perSecond: x.perSecond,
    latency: x.latency,
    settled: x.settled,
    reshards: String(x.reshards),
    other: '',
  });
  printTable(
    `Live reshard: real path from 8 shards, ${o.connections} connections, 1 API process; slices in the order ` +
      `${slices.map((s) => s.key).join(', ')}; the c8rs slices reshard every ${o.everyMs / 1000} s via POST /admin/products/:id/reshard`,
    [
      { header: 'run', value: (r: Row) => r.key, align: 'left' },
      { header: 'window s', value: (r: Row) => num(r.seconds) },
      { header: 'reshards (shards)', value: (r: Row) => r.reshards, align: 'left' },
      { header: 'orders/s', value: (r: Row) => num(r.perSecond) },
      { header: 'p50 ms', value: (r: Row) => ms(r.latency.p50) },
      { header: 'p99 ms', value: (r: Row) => ms(r.latency.p99) },
      { header: `max ms (answered after ${o.firstMs / 1000} s)`, value: (r: Row) => ms(r.settled.max) },
      { header: 'non-202', value: (r: Row) => r.other, align: 'left' },
    ],
    [...sliceRows, armRow('without', a.without), armRow('with', a.with)],
  );
}

function printCalls(a: ReshardAnalysis): void {
  printTable(
    'Reshard calls (timed in the bench process, request sent → answer read) and the orders in flight during each',
    [
      { header: 'slice', value: (c: CallRow) => c.slice, align: 'left' },
      { header: 'at s', value: (c: CallRow) => (c.atMs / 1000).toFixed(2) },
      { header: 'shards', value: (c: CallRow) => `${c.from}→${c.to}`, align: 'left' },
      { header: 'status', value: (c: CallRow) => (c.status ? String(c.status) : 'error') },
      { header: 'call ms', value: (c: CallRow) => ms(c.ms) },
      { header: 'started late ms', value: (c: CallRow) => ms(c.lateMs) },
      { header: 'orders overlapping', value: (c: CallRow) => num(c.orders) },
      { header: 'longest of them ms', value: (c: CallRow) => ms(c.maxLatency) },
      { header: 'non-2xx of them', value: (c: CallRow) => num(c.non2xx) },
    ],
    a.calls,
  );
  for (const c of a.calls)
    if (c.error) console.log(`  reshard ${c.from}→${c.to} in ${c.slice} failed: ${c.error}`);
}

function printSummary(a: ReshardAnalysis, slices: Slice[], o: ReshardReportOptions): void {
  const other = statusText(a.overlappingStatuses, 202);
  console.log(
    `orders/s with ÷ without: ${times(ratio(a.with.perSecond, a.without.perSecond), 3)} pooled ` +
      `(per pair: ${a.pairs.map((p) => `${p.with}/${p.without} ${times(p.ratio)}`).join(', ')}); ` +
      `p99 without ÷ with: ${times(ratio(a.without.latency.p99, a.with.latency.p99))} (${ms(a.without.latency.p99)} / ${ms(a.with.latency.p99)} ms).\n` +
      `Reshard admin call: p50 ${ms(a.callMs.p50)} ms, max ${ms(a.callMs.max)} ms over ${a.callMs.count} reshards; the service's own ` +
      `time for the change (admin lock + every shard lock + retire/switch + announce, without the audit): mean ${ms(o.service.meanMs)} ms over ${num(o.service.count)}.\n` +
      `Longest time an order waited because of a reshard: ${ms(a.overlapping.max)} ms, the longest latency of the ${num(a.overlapping.count)} orders ` +
      `whose [sent, answered] overlapped a reshard call (sent → answered + ${AFTER_MS} ms; their p50 ${ms(a.overlapping.p50)}, p99 ${ms(a.overlapping.p99)} ms${other ? `; non-202 ${other}` : ''}).\n` +
      `  Set against the latency orders have anyway under this load: the other ${num(a.outside.count)} orders of the c8rs slices ` +
      `max ${ms(a.outside.max)} ms, p99 ${ms(a.outside.p99)} ms; the c8s slices max ${ms(a.without.settled.max)} ms, p99 ${ms(a.without.settled.p99)} ms ` +
      `(all counted from ${o.firstMs / 1000} s into each window). An upper bound: an overlapping order's latency includes that queueing too.`,
  );
  if (slices.some((s) => s.resharding && s.calls.some((c) => c.lateMs > 50)))
    console.log('  (a reshard started late: the one before it overran its 2 s slot)');
}

/** Prints the live-reshard section of the report. */
export function printReshard(a: ReshardAnalysis, slices: Slice[], o: ReshardReportOptions): void {
  printSlices(a, slices, o);
  printCalls(a);
  printSummary(a, slices, o);
}
