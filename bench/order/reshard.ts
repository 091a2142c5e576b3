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

export interface CallRow extends Omit<ReshardCall, 'start' | 'end'> {
  slice: string;
  /** ms from the start of its window to the call being sent. */
  atMs: number;
  /** Duration of the call, ms. */
  ms: number;
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
export function latenciesFrom(t: Timeline, from: number): number[] {
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
  const classes: Classes = { inside: [], outside: [], statuses: {} };
  const calls = slices
    .filter((x) => x.resharding)
    .flatMap((s) => classify(s, s.startedAt + firstMs, classes));
  return {
    without: arm(false),
    with: arm(true),
    pairs: pairsOf(slices),
    calls,
    callMs: summarize(calls.filter((c) => c.status === 200).map((c) => c.ms)),
    overlapping: summarize(classes.inside),
    outside: summarize(classes.outside),
    overlappingStatuses: classes.statuses,
  };
}

/** Latencies of the orders overlapping a call and of the others, and the overlapping ones' statuses. */
interface Classes {
  inside: number[];
  outside: number[];
  statuses: Record<string, number>;
}

/** The slice's calls as rows, each order of it counted against every call it overlapped. */
function classify(s: Slice, from: number, into: Classes): CallRow[] {
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
  for (let i = 0; i < t.end.length; i++) {
    const st = t.start[i] as number;
    const e = t.end[i] as number;
    const status = t.status[i] as number;
    const latency = e - st;
    let hit = false;
    s.calls.forEach((c, k) => {
      if (!(st < c.end + AFTER_MS && e > c.start)) return;
      hit = true;
      const row = rows[k] as CallRow;
      row.orders += 1;
      if (!(row.maxLatency >= latency)) row.maxLatency = latency;
      if (status < 200 || status >= 300) row.non2xx += 1;
    });
    if (hit) {
      into.inside.push(latency);
      into.statuses[status] = (into.statuses[status] ?? 0) + 1;
    } else if (e >= from) into.outside.push(latency);
  }
  return rows;
}

/** ABBA: the first without goes with the first with, the last without with the last with. */
function pairsOf(slices: Slice[]): ReshardAnalysis['pairs'] {
  const withouts = slices.filter((s) => !s.resharding);
  const withs = slices.filter((s) => s.resharding);
  return withs.slice(0, withouts.length).map((b, k) => {
    const a = withouts[k] as Slice;
    return { without: a.key, with: b.key, ratio: ratio(b.ok / b.seconds, a.ok / a.seconds) };
  });
}
