// Live resharding under the order load: an admin loop that reshards a product on a fixed schedule
// through the public admin API, and the analysis that lays each order's [sent, answered] interval
// (load.ts `timeline`) over the admin calls' windows.
//
// The runs come in slices taken in the order without, with, with, without (ABBA), pooled per arm: on
// a shared machine the load from other processes drifts over tens of seconds, and a single
// without-then-with pair would put that drift straight into the ratio; ABBA cancels a linear drift.
// Each with-slice reshards at 1 s, 3 s, … (every 2 s, the last at least 1 s before the window ends).
//
// "How long did an order wait because of a reshard" is measured from the whole load, not from a
// probe: every order whose interval overlaps an admin call's window [sent, answered + AFTER_MS] is
// one a reshard could have delayed (orders queue behind the admin on the shard locks, or find their
// shard retired and go again on the new generation). The call's window contains the part under the
// shard locks (plus the admin lock, the audit reads/writes and the HTTP round trip); AFTER_MS covers
// what may trail the answer (the announcement reaching the API's catalog after the answer left, so
// an order can still try a retired shard once). So no order a reshard held up is classed as outside.
// The longest latency among the overlapping orders is the longest wait a reshard can have caused;
// the orders outside every window (same run) and the runs without resharding give the latency an
// order has anyway under this load, to set it against.
// A sequential probe client would see one order per round trip (a few hundred over the run) and
// would itself be one more connection; the timeline sees all of them.
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import { call } from '../../harness/service.ts';
import { ratio, type Summary, summarize } from '../lib/stats.ts';
import { ms, num, printTable, times } from '../lib/table.ts';
import type { Timeline } from './load.ts';

/** An admin call's window, for the overlap test, runs on this long after its answer was read. */
export const AFTER_MS = 100;

export interface ReshardCall {
  /** performance.now() ms when the admin call was sent and when its answer was read. */
  start: number;
  end: number;
  from: number;
  to: number;
  status: number;
  /** Generation in the answer (200 only). */
  generation?: number;
  /** Set when the call failed or answered anything but 200. */
  error?: string;
  /** The call started later than scheduled because the previous one was still running (ms). */
  lateMs: number;
}

export interface ReshardLoopOptions {
  url: string;
  productId: string;
  headers: Record<string, string>;
  /** Shard count before the first reshard. */
  from: number;
  /** Shard counts to move to, in turn (cycled). */
  cycle: number[];
  /** performance.now() of the first reshard, then one every `everyMs`. */
  firstAt: number;
  everyMs: number;
  /** No reshard starts after this performance.now(). */
  lastStartBy: number;
}

/**
 * Reshards on schedule, one call at a time (admins are serialised by the service anyway): a call that
 * overruns its slot delays the next, which then starts at once. Never throws: failures are recorded.
 */
export async function runReshardLoop(o: ReshardLoopOptions): Promise<ReshardCall[]> {
  const calls: ReshardCall[] = [];
  let from = o.from;
  for (let k = 0; ; k++) {
    const at = o.firstAt + k * o.everyMs;
    if (at > o.lastStartBy) break;
    const wait = at - performance.now();
    if (wait > 0) await sleep(wait);
    const to = o.cycle[k % o.cycle.length] as number;
    const start = performance.now();
    const c: ReshardCall = { start, end: start, from, to, status: 0, lateMs: Math.max(0, start - at) };
    try {
      const r = await call(
        o.url,
        'POST',
        `/admin/products/${o.productId}/reshard`,
        { shards: to },
        o.headers,
      );
      c.status = r.status;
      if (r.status === 200) {
        c.generation = Number(r.body.generation);
        if (r.body.shards !== to) c.error = `answered shards ${String(r.body.shards)}, asked ${to}`;
        from = to;
      } else {
        c.error = `${r.status} ${JSON.stringify(r.body)}`;
      }
    } catch (err) {
      c.error = err instanceof Error ? err.message : String(err);
    }
    c.end = performance.now();
    calls.push(c);
  }
  return calls;
}

/** One window of the real path, with or without the admin loop (see the header). */
export interface Slice {
  key: string;
  resharding: boolean;
  seconds: number;
  /** 202 answers inside the window. */
  ok: number;
  /** Latencies (ms) of every answer inside the window. */
  latencies: Float64Array;
  timeline: Timeline;
  /** performance.now() at the start of the window. */
  startedAt: number;
  calls: ReshardCall[];
  /** Answers other than 202, as "status:count ..." ('' if none). */
  other: string;
}

export interface Arm {
  slices: string[];
  seconds: number;
  perSecond: number;
  /** Answers inside the windows. */
  latency: Summary;
  /** Every order answered from the first reshard's scheduled time on (window and tail). */
  settled: Summary;
  reshards: number;
}

export interface CallRow {
  slice: string;
  /** ms from the start of its window to the call being sent. */
  atMs: number;
  /** Duration of the call, ms. */
  ms: number;
  from: number;
  to: number;
  status: number;
  generation?: number;
  error?: string;
  lateMs: number;
  /** Orders whose [sent, answered] overlapped the call's window (to AFTER_MS after its answer). */
  orders: number;
  /** Longest latency among them (ms); NaN when none. */
  maxLatency: number;
  /** Of those orders, answers other than 2xx. */
  non2xx: number;
}

export interface ReshardAnalysis {
  without: Arm;
  with: Arm;
  /** orders/s with ÷ without, per ABBA pair (slice 1 with 2, slice 4 with 3). */
  pairs: Array<{ without: string; with: string; ratio: number }>;
  calls: CallRow[];
  /** Admin call durations (ms) of the calls that answered 200. */
  callMs: Summary;
  /** Latencies (ms) of orders that overlapped a reshard call, of the other orders of the with-slices
   * (answered from the first reshard's scheduled time on) and their statuses. */
  overlapping: Summary;
  outside: Summary;
  overlappingStatuses: Record<string, number>;
}

function concat(parts: ArrayLike<number>[]): Float64Array {
  const out = new Float64Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.length;
  }
  return out;
}

/** Latencies of the orders answered at or after `from` (performance.now()). */
function latenciesFrom(t: Timeline, from: number): number[] {
  const out: number[] = [];
  for (let i = 0; i < t.end.length; i++) {
    const e = t.end[i] as number;
    if (e >= from) out.push(e - (t.start[i] as number));
  }
  return out;
}

/**
 * Pools the slices per arm and classes every order of the with-slices as overlapping a reshard call
 * or not. Latency comparisons between orders (max, p99 of "overlapping" and "outside", the
 * without-arm's max) use only orders answered from `firstMs` into their window on, in both arms: the
 * first second of a window (connections opening, the first orders of a fresh product) has no
 * reshard in the with-slices and would otherwise only add noise to the other side.
 */
export function analyseReshard(slices: Slice[], firstMs: number): ReshardAnalysis {
  const arm = (resharding: boolean): Arm => {
    const mine = slices.filter((s) => s.resharding === resharding);
    const seconds = mine.reduce((a, s) => a + s.seconds, 0);
    return {
      slices: mine.map((s) => s.key),
      seconds,
      perSecond: mine.reduce((a, s) => a + s.ok, 0) / seconds,
      latency: summarize(concat(mine.map((s) => s.latencies))),
      settled: summarize(concat(mine.map((s) => latenciesFrom(s.timeline, s.startedAt + firstMs)))),
      reshards: mine.reduce((a, s) => a + s.calls.length, 0),
    };
  };
  const inside: number[] = [];
  const outside: number[] = [];
  const overlappingStatuses: Record<string, number> = {};
  const calls: CallRow[] = [];
  for (const s of slices.filter((x) => x.resharding)) {
    const rows: CallRow[] = s.calls.map((c) => ({
      slice: s.key,
      atMs: c.start - s.startedAt,
      ms: c.end - c.start,
      from: c.from,
      to: c.to,
      status: c.status,
      generation: c.generation,
      error: c.error,
      lateMs: c.lateMs,
      orders: 0,
      maxLatency: Number.NaN,
      non2xx: 0,
    }));
    const t = s.timeline;
    const from = s.startedAt + firstMs;
    for (let i = 0; i < t.end.length; i++) {
      const st = t.start[i] as number;
      const e = t.end[i] as number;
      const status = t.status[i] as number;
      const latency = e - st;
      let hit = false;
      s.calls.forEach((c, k) => {
        if (st < c.end + AFTER_MS && e > c.start) {
          hit = true;
          const row = rows[k] as CallRow;
          row.orders += 1;
          if (!(row.maxLatency >= latency)) row.maxLatency = latency;
          if (status < 200 || status >= 300) row.non2xx += 1;
        }
      });
      if (hit) {
        inside.push(latency);
        overlappingStatuses[status] = (overlappingStatuses[status] ?? 0) + 1;
      } else if (e >= from) {
        outside.push(latency);
      }
    }
    calls.push(...rows);
  }
  const pairs: ReshardAnalysis['pairs'] = [];
  const withouts = slices.filter((s) => !s.resharding);
  const withs = slices.filter((s) => s.resharding);
  // ABBA: the first without goes with the first with, the last without with the last with.
  for (let k = 0; k < Math.min(withouts.length, withs.length); k++) {
    const a = withouts[k] as Slice;
    const b = withs[k] as Slice;
    pairs.push({ without: a.key, with: b.key, ratio: ratio(b.ok / b.seconds, a.ok / a.seconds) });
  }
  return {
    without: arm(false),
    with: arm(true),
    pairs,
    calls,
    callMs: summarize(calls.filter((c) => c.status === 200).map((c) => c.ms)),
    overlapping: summarize(inside),
    outside: summarize(outside),
    overlappingStatuses,
  };
}

function statuses(counts: Record<string, number>, expect: number): string {
  return Object.entries(counts)
    .filter(([code]) => Number(code) !== expect)
    .map(([code, n]) => `${code}:${n}`)
    .join(' ');
}

/** Prints the live-reshard section of the report. */
export function printReshard(
  a: ReshardAnalysis,
  slices: Slice[],
  o: {
    connections: number;
    everyMs: number;
    firstMs: number;
    /** The service's own time for the change (flashsale_admin_change_duration_seconds, kind reshard). */
    service: { count: number; meanMs: number };
  },
): void {
  const shardPath = (s: Slice) => [8, ...s.calls.map((c) => c.to)].join('→');
  const withSlices = slices.filter((s) => s.resharding);
  interface Row {
    key: string;
    seconds: number;
    perSecond: number;
    latency: Summary;
    settled: Summary;
    reshards: string;
    other: string;
  }
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
  const other = statuses(a.overlappingStatuses, 202);
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
  if (withSlices.some((s) => s.calls.some((c) => c.lateMs > 50)))
    console.log('  (a reshard started late: the one before it overran its 2 s slot)');
}
