// Live rates of this process for the dashboard, from its own prom-client registry: while someone
// watches, a one-second sampler reads the order, latency, lock and writer counters and keeps their
// per-second deltas for the last five minutes. It never touches Redis, and stops a minute after the
// last poll, so an unwatched process pays nothing. With several API processes each has its own.
import type { Metrics } from '../metrics.ts';

/** Sampling period and how much history is kept (points), and how long it runs without a poll. */
export const SAMPLE_MS = 1000;
export const HISTORY_POINTS = 300;
export const IDLE_STOP_MS = 60_000;
/** The `now` figures are taken over this many seconds (fewer right after the start). */
export const NOW_WINDOW_S = 10;

/** Outcome groups of the dashboard: the answers a sale produces, the rest folded into `other`. */
export const RATE_GROUPS = ['accepted', 'sold_out', 'queued', 'busy', 'errors_5xx', 'other'] as const;
type Group = (typeof RATE_GROUPS)[number];
const GROUP_OF: Record<string, Group> = {
  accepted: 'accepted',
  sold_out: 'sold_out',
  queued: 'queued',
  busy: 'busy',
  unavailable: 'errors_5xx',
  error: 'errors_5xx',
};

/** Cumulative histogram buckets: [upper bound in seconds (Infinity last), count]. */
type Buckets = Array<[number, number]>;

interface Snapshot {
  t: number;
  orders: Record<Group, number>;
  accepted: Buckets;
  lockWait: Buckets;
  handoffs: number;
  written: number;
  invalidTickets: number;
}

/** Per-second figures over one interval (a point of the charts) or over the last NOW_WINDOW_S. */
export interface RatePoint {
  /** End of the interval, epoch ms. */
  t: number;
  seconds: number;
  ordersPerSecond: Record<Group, number>;
  /** Latency of accepted orders (202); null when none was accepted in the interval. */
  acceptedP50Ms: number | null;
  acceptedP99Ms: number | null;
  /** Time to obtain a shard lock, p99; null when no lock was taken. */
  lockWaitP99Ms: number | null;
  handoffsPerSecond: number;
  /** Rows this process's writer committed per second (0 in an API-only process). */
  writtenPerSecond: number;
  /** Orders refused 400 invalid_ticket per second (altered, expired or moved waiting-room tickets). */
  invalidTicketsPerSecond: number;
}

/**
 * The q-quantile of a histogram's observations as Prometheus' histogram_quantile computes it: linear
 * interpolation inside the bucket the rank falls in; the highest finite bound when it falls in +Inf.
 */
export function bucketQuantile(q: number, buckets: Buckets): number | null {
  const total = buckets.at(-1)?.[1] ?? 0;
  if (total <= 0) return null;
  const rank = q * total;
  let lowerBound = 0;
  let lowerCount = 0;
  for (const [bound, count] of buckets) {
    if (count >= rank) {
      if (bound === Number.POSITIVE_INFINITY) return lowerBound;
      return lowerBound + (bound - lowerBound) * ((rank - lowerCount) / (count - lowerCount || 1));
    }
    lowerBound = bound;
    lowerCount = count;
  }
  return lowerBound;
}

const toMs = (seconds: number | null) => (seconds === null ? null : seconds * 1000);

function subtract(later: Buckets, earlier: Buckets): Buckets {
  return later.map(([bound, count], i) => [bound, count - (earlier[i]?.[1] ?? 0)]);
}

/** Figures between two snapshots. */
function between(a: Snapshot, b: Snapshot): RatePoint {
  const seconds = Math.max(0.001, (b.t - a.t) / 1000);
  const perSecond = (x: number, y: number) => Math.max(0, y - x) / seconds;
  const ordersPerSecond = Object.fromEntries(
    RATE_GROUPS.map((g) => [g, perSecond(a.orders[g], b.orders[g])]),
  ) as Record<Group, number>;
  const accepted = subtract(b.accepted, a.accepted);
  return {
    t: b.t,
    seconds,
    ordersPerSecond,
    acceptedP50Ms: toMs(bucketQuantile(0.5, accepted)),
    acceptedP99Ms: toMs(bucketQuantile(0.99, accepted)),
    lockWaitP99Ms: toMs(bucketQuantile(0.99, subtract(b.lockWait, a.lockWait))),
    handoffsPerSecond: perSecond(a.handoffs, b.handoffs),
    writtenPerSecond: perSecond(a.written, b.written),
    invalidTicketsPerSecond: perSecond(a.invalidTickets, b.invalidTickets),
  };
}

interface Sample {
  value: number;
  labels: Record<string, string | number>;
  metricName?: string;
}

/** A histogram's cumulative buckets, of the series whose labels include `match`. */
function buckets(values: Sample[], match: Record<string, string>): Buckets {
  return values
    .filter(
      (v) => v.metricName?.endsWith('_bucket') && Object.entries(match).every(([k, x]) => v.labels[k] === x),
    )
    .map((v): [number, number] => [
      v.labels.le === '+Inf' ? Number.POSITIVE_INFINITY : Number(v.labels.le),
      v.value,
    ])
    .sort((x, y) => x[0] - y[0]);
}

export class RateSampler {
  private readonly snapshots: Snapshot[] = [];
  private readonly points: RatePoint[] = [];
  private timer: NodeJS.Timeout | undefined;
  private lastPoll = 0;
  private sampling: Promise<void> | undefined;

  constructor(private readonly metrics: Metrics) {}

  /** A poll: starts sampling if it is not running (the first point comes one period later). */
  async watch(): Promise<void> {
    this.lastPoll = Date.now();
    if (this.timer) return;
    this.timer = setInterval(() => void this.tick(), SAMPLE_MS);
    this.timer.unref();
    await this.tick();
  }

  /** Points newer than `since` (epoch ms), oldest first. */
  history(since = 0): RatePoint[] {
    return this.points.filter((p) => p.t > since);
  }

  /** Figures over the last NOW_WINDOW_S seconds, or null before the second snapshot. */
  now(): RatePoint | null {
    const last = this.snapshots.at(-1);
    const first = this.snapshots.find((s) => last && last.t - s.t <= NOW_WINDOW_S * 1000 + SAMPLE_MS / 2);
    return last && first && first !== last ? between(first, last) : null;
  }

  stop(): void {
    clearInterval(this.timer);
    this.timer = undefined;
    this.snapshots.length = 0;
    this.points.length = 0;
  }

  private tick(): Promise<void> {
    if (Date.now() - this.lastPoll > IDLE_STOP_MS) {
      this.stop();
      return Promise.resolve();
    }
    // A slow read (a starved event loop) must not stack reads up.
    this.sampling ??= this.read()
      .then((s) => this.add(s))
      .finally(() => {
        this.sampling = undefined;
      });
    return this.sampling;
  }

  private add(s: Snapshot): void {
    const previous = this.snapshots.at(-1);
    if (previous) {
      this.points.push(between(previous, s));
      if (this.points.length > HISTORY_POINTS) this.points.shift();
    }
    this.snapshots.push(s);
    // Enough snapshots for the `now` window.
    if (this.snapshots.length > NOW_WINDOW_S + 2) this.snapshots.shift();
  }

  private async read(): Promise<Snapshot> {
    const m = this.metrics;
    const [orders, seconds, lockWait, handoffs, batch, tickets] = await Promise.all([
      m.orders.get(),
      m.orderSeconds.get(),
      m.lockWait.get(),
      m.lockHandoffs.get(),
      m.writerBatchSize.get(),
      m.ticketsRefused.get(),
    ]);
    const byGroup = Object.fromEntries(RATE_GROUPS.map((g) => [g, 0])) as Record<Group, number>;
    for (const v of orders.values) byGroup[GROUP_OF[String(v.labels.outcome)] ?? 'other'] += v.value;
    return {
      t: Date.now(),
      orders: byGroup,
      accepted: buckets(seconds.values, { outcome: 'accepted' }),
      lockWait: buckets(lockWait.values, { lock: 'shard', result: 'acquired' }),
      handoffs: handoffs.values.filter((v) => v.labels.lock === 'shard').reduce((a, v) => a + v.value, 0),
      written: batch.values.find((v) => v.metricName === 'flashsale_writer_batch_size_sum')?.value ?? 0,
      invalidTickets: tickets.values.reduce((a, v) => a + v.value, 0),
    };
  }
}
