// One product's waiting line as this process sees it: the serving point and the counts ahead from
// the last report to Redis, plus the first requests queued here since then (reported in a batch).
import { type Draw, placeInLine } from './lottery.ts';
import { RETURN_WINDOW_MS, Returns } from './returns.ts';

/** A line's state as the sync script answers it. */
export interface LineView {
  /** Bucket being served, and buyers let in from it so far. */
  cur: number;
  used: number;
  /** Buyers let in per second (smoothed, all processes). */
  rate: number;
  /** Buyers this report let in (on this process's capacity). */
  passed: number;
  /** Buckets from `cur` on, ascending, with their counts of first requests. */
  buckets: number[];
  counts: number[];
}

/** Where a buyer stands: buyers ahead, and how long until served at the current rate. */
export interface Standing {
  position: number;
  etaMs: number;
}

/** A buyer as the line orders it. */
export interface Buyer {
  userId: string;
  /** The first request, ms on Redis' clock. */
  firstSeen: number;
}

export const EMPTY_VIEW: LineView = { cur: -1, used: 0, rate: 0, passed: 0, buckets: [], counts: [] };

/**
 * A line whose last buyers were just let in stays up this long (ms): they come back within it, and a
 * newcomer meanwhile queues behind them (unless a slot is free beyond those expected back, see
 * WaitingRoom.spare) rather than walking in first because the line happens to be empty.
 */
export const DRAIN_GRACE_MS = RETURN_WINDOW_MS;

export class WaitingLine {
  private view: LineView = EMPTY_VIEW;
  /** First requests queued here and not yet reported: bucket → count. */
  private arrivals = new Map<number, number>();
  /** Units still on sale, as last read. */
  available = Number.POSITIVE_INFINITY;
  /** Last time (local ms) an order of this product was seen here: idle lines stop syncing. */
  lastUsed = 0;
  /** The sale's lottery window, if it has one. */
  draw: Draw | undefined;
  /** The buyers this process's reports let in, on their way back. */
  readonly returns = new Returns();
  /** Capacity short of a whole buyer, carried to the next report so small shares add up. */
  private carry = 0;
  /** Until when (Redis' clock) the line is draining: see DRAIN_GRACE_MS. */
  private drainingUntil = Number.NEGATIVE_INFINITY;

  constructor(
    readonly productId: string,
    private readonly bucketMs: number,
  ) {}

  /** True while buyers are waiting: a new buyer then goes to the back of the line. */
  get active(): boolean {
    return this.view.buckets.length > 0 || this.arrivals.size > 0;
  }

  /** The first-seen time up to which buyers are let in (Redis' clock, ms). */
  get servingPoint(): number {
    const { cur, used, buckets, counts } = this.view;
    if (cur < 0) return Number.NEGATIVE_INFINITY;
    const count = buckets[0] === cur ? (counts[0] ?? 0) : 0;
    const within = count > 0 ? (used / count) * this.bucketMs : 0;
    return cur * this.bucketMs + within;
  }

  /** Buyers waiting, across every process (as of the last report, plus this process's since). */
  get waiting(): number {
    let n = -this.view.used;
    for (const c of this.view.counts) n += c;
    for (const c of this.arrivals.values()) n += c;
    return Math.max(0, n);
  }

  /** Buyers let in per second, across every process. */
  get rate(): number {
    return this.view.rate;
  }

  /** True while a lottery window is open: its buyers wait for the draw, nobody is let in. */
  drawing(now: number): boolean {
    return this.draw !== undefined && now < this.draw.closesAt;
  }

  /** A buyer's place in the line: the first request, or its drawn place in a lottery window. */
  placeOf(buyer: Buyer): number {
    return placeInLine(this.draw, buyer.userId, buyer.firstSeen);
  }

  /** True when the line lets this buyer in now: nobody waits (nor was let in just now), or its turn came. */
  lets(buyer: Buyer, now: number): boolean {
    if (this.drawing(now)) return false;
    return (!this.active && now >= this.drainingUntil) || this.admits(buyer);
  }

  admits(buyer: Buyer): boolean {
    return this.placeOf(buyer) < this.servingPoint;
  }

  /** Counts a first request queued here; it is reported with the next sync. */
  arrive(buyer: Buyer): void {
    const bucket = Math.floor(this.placeOf(buyer) / this.bucketMs);
    this.arrivals.set(bucket, (this.arrivals.get(bucket) ?? 0) + 1);
  }

  /** The arrivals to report, as the sync script takes them ("bucket:count,..."), and forgets them. */
  takeArrivals(): string {
    const report = [...this.arrivals].map(([b, c]) => `${b}:${c}`).join(',');
    this.arrivals = new Map();
    return report;
  }

  /** Arrivals whose report failed, to go with the next one. */
  putBack(report: string): void {
    for (const pair of report.split(',').filter(Boolean)) {
      const [b, c] = pair.split(':').map(Number) as [number, number];
      this.arrivals.set(b, (this.arrivals.get(b) ?? 0) + c);
    }
  }

  /** Whole buyers to let in out of `capacity` (plus what earlier reports left over). */
  share(capacity: number): number {
    const total = capacity + this.carry;
    const whole = Math.floor(total);
    this.carry = total - whole;
    return whole;
  }

  /**
   * The line as a report answered it, at `now` (Redis' clock); of the buyers it let in, up to
   * `used` came in on capacity orders used (Returns.letIn).
   */
  update(view: LineView, now: number, used = 0): void {
    this.view = view;
    this.returns.letIn(view.passed, now, Math.min(view.passed, Math.floor(used)));
    if (view.buckets.length > 0) this.drainingUntil = now + DRAIN_GRACE_MS;
  }

  /**
   * Buyers ahead of this one, and when it should be served: at the line's pace, or at `pace` (buyers
   * per second) when that is faster. A line's own pace lags its capacity (it moves as fast as the
   * buyers it let in come back), and an ETA from the lag sends buyers away for longer than the line
   * takes to reach them.
   */
  standing(buyer: Buyer, pace = 0): Standing {
    const bucket = Math.floor(this.placeOf(buyer) / this.bucketMs);
    const { buckets, counts, used } = this.view;
    let ahead = 0;
    for (let i = 0; i < buckets.length && (buckets[i] ?? 0) <= bucket; i++) {
      const count = (counts[i] ?? 0) - (i === 0 ? used : 0);
      // Within its own bucket a buyer is taken to be in the middle.
      ahead += buckets[i] === bucket ? count / 2 : count;
    }
    for (const [b, c] of this.arrivals) if (b < bucket) ahead += c;
    const position = Math.max(0, Math.round(ahead));
    const rate = Math.max(this.rate, pace);
    const etaMs = rate > 0 ? Math.round((position * 1000) / rate) : Number.POSITIVE_INFINITY;
    return { position, etaMs };
  }
}
