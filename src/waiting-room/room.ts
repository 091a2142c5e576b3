// The waiting room of one API process: first come, first served once orders outrun capacity. Every
// process reports its queued arrivals and spare capacity to Redis in one batch per tick per product.
import type { RedisClient } from '../redis/connection.ts';
import { QueuedError } from './errors.ts';
import { WaitingLine } from './line.ts';
import { configureDraw, type DrawView, drawView, loadDraw } from './lottery.ts';
import { syncLine } from './sync.ts';
import type { Ticket, TicketSigner } from './ticket.ts';

/** What the room reads of this process's admission control (AdmissionControl). */
export interface CapacitySignals {
  /** Orders admitted and answered since start (monotonic). */
  readonly completed: number;
  /** Orders that may run at once, and those running. */
  readonly limit: number;
  readonly running: number;
}

export interface WaitingRoomOptions {
  redis: RedisClient;
  /** Redis' clock as estimated here (RedisClock.now): first-seen times and the line share it. */
  now: () => number;
  signer: TicketSigner;
  /** Units of a product still on sale (read once per tick for lines with buyers waiting). */
  available: (productId: string) => Promise<number>;
  /** True when this process knows the product sold out (its orders are then answered from memory). */
  soldOut: (productId: string) => boolean;
  /** Width of a line's time bucket (ms); admission within a bucket is in arrival order. Default 20. */
  bucketMs?: number;
  /** How often each line is reported and read back (ms). Default 100. */
  tickMs?: number;
}

/** A buyer's claim to a place: the verified ticket, or a first request now. */
export interface Arrival {
  productId: string;
  userId: string;
  firstSeen: number;
  ticket?: Ticket;
}

/** A line as the dashboard and the metrics show it. */
export interface LineStats {
  /** Buyers waiting (every process's). */
  waiting: number;
  /** How far behind now the serving point is, ms. */
  servingLagMs: number;
  /** Buyers let in per second (all processes together). */
  admittedPerSecond: number;
  /** ETA of the last buyer in line, ms (0: nobody waits). */
  etaMs: number;
}

/** What GET /api/products/:id shows of a product's queue. */
export interface QueueView {
  waiting: number;
  /** How far behind now the line serves, ms; null while nobody has been let in yet. */
  servingLagMs: number | null;
  lottery?: DrawView;
}

/** Waiting buyers come back at the earliest this soon, at the latest this late. */
const MIN_RETRY_MS = 250;
const MAX_RETRY_MS = 15_000;
/** The ETA of a line whose pace is not measured yet (its first tick): a second, not the maximum. */
const UNKNOWN_ETA_MS = 1000;
/** A let-in buyer is back within about this long: idle slots are offered at this pace. */
const RETURN_MS = 500;
/** The pace this process has shown is forgotten over about this long (ms): see WaitingRoom.pace. */
const PACE_MEMORY_MS = 10_000;
/** A line nobody here asked about for this long stops syncing. */
const IDLE_MS = 30_000;

/**
 * @example
 * const room = new WaitingRoom({ redis, now: () => clock.now(), signer, available, soldOut });
 * room.start(admission);
 * const arrival = room.arrival(order, req.get('queue-ticket'));
 * const line = await room.line(order.productId);
 * if (!room.lets(line, arrival)) throw room.queue(arrival, line);
 */
export class WaitingRoom {
  private readonly lines = new Map<string, WaitingLine>();
  /** Lines being read for the first time. */
  private readonly creating = new Map<string, Promise<WaitingLine>>();
  private readonly bucketMs: number;
  private readonly tickMs: number;
  private timer: NodeJS.Timeout | undefined;
  private lastCompleted = 0;
  /** When (this.o.now()) the last report was made. */
  private lastReportAt = 0;
  /** Orders completed since lastReportAt, not yet in `completing`. */
  private unmeasured = 0;
  /** Orders per second completed here, smoothed over about a second. */
  private completing = 0;
  /**
   * The best of `completing` lately, fading over PACE_MEMORY_MS: what this process has shown it can
   * take. ETAs use it when the line's own pace is slower (WaitingLine.standing).
   */
  private pace = 0;
  private capacity: CapacitySignals | undefined;
  private ticking: Promise<void> | undefined;

  constructor(private readonly o: WaitingRoomOptions) {
    this.bucketMs = o.bucketMs ?? 20;
    this.tickMs = o.tickMs ?? 100;
  }

  /** Starts the reports; the line advances by the spare capacity of `capacity`. */
  start(capacity: CapacitySignals): void {
    this.capacity = capacity;
    this.lastCompleted = capacity.completed;
    this.lastReportAt = this.o.now();
    this.timer = setInterval(() => {
      if (!this.ticking) void this.tick();
    }, this.tickMs);
    this.timer.unref();
  }

  /**
   * Stops the reports. A report under way is not waited for: on a shutdown its connection may already
   * be closing, and a line left unreported costs only the arrivals since the last report.
   */
  stop(): void {
    clearInterval(this.timer);
    this.capacity = undefined;
  }

  /**
   * The buyer's place: its ticket's first-seen time (verified), or when its request was read
   * (`waitedMs` ago). Throws InvalidTicketError.
   */
  arrival(
    order: { productId: string; userId: string },
    ticketHeader: string | undefined,
    waitedMs = 0,
  ): Arrival {
    const now = this.o.now();
    if (ticketHeader === undefined) return { ...order, firstSeen: Math.round(now - waitedMs) };
    const ticket = this.o.signer.verify(ticketHeader, order.productId, order.userId, now);
    return { ...order, firstSeen: ticket.firstSeen, ticket };
  }

  /**
   * The product's line in this process, created on first use and read from Redis before anyone gets
   * it: requests arriving meanwhile wait for the same read rather than pass a line they cannot see.
   */
  async line(productId: string): Promise<WaitingLine> {
    const line = this.known(productId);
    if (line) return line;
    let pending = this.creating.get(productId);
    if (!pending) {
      pending = this.create(productId).finally(() => this.creating.delete(productId));
      this.creating.set(productId, pending);
    }
    return pending;
  }

  /** The product's line if this process already has it (no promise: most requests find it). */
  known(productId: string): WaitingLine | undefined {
    const line = this.lines.get(productId);
    if (line) line.lastUsed = Date.now();
    return line;
  }

  private async create(productId: string): Promise<WaitingLine> {
    const line = new WaitingLine(productId, this.bucketMs);
    line.lastUsed = Date.now();
    await this.sync(line, 0);
    this.lines.set(productId, line);
    return line;
  }

  /** True when the line lets this buyer in now: there is none, or the buyer's time has come. */
  lets(line: WaitingLine, arrival: Arrival): boolean {
    return line.lets(arrival, this.o.now());
  }

  /** The 429 queued answer for a buyer who cannot be served now; a first request joins the line. */
  queue(arrival: Arrival, line: WaitingLine): QueuedError {
    // Signing is deterministic: a returning buyer gets back the very ticket it holds, unsigned again.
    const ticket =
      arrival.ticket?.header ?? this.o.signer.issue(arrival.productId, arrival.userId, arrival.firstSeen);
    if (!arrival.ticket) line.arrive(arrival);
    const now = this.o.now();
    const { position, etaMs } = line.lets(arrival, now)
      ? { position: 0, etaMs: 0 }
      : line.standing(arrival, this.pace);
    // In a lottery window nobody is served before the draw: come back once it has closed.
    const drawMs = line.drawing(now) ? (line.draw?.closesAt ?? now) - now : 0;
    const finite = Math.max(drawMs, Number.isFinite(etaMs) ? etaMs : UNKNOWN_ETA_MS);
    return new QueuedError(
      arrival.productId,
      {
        ticket,
        position,
        etaMs: finite,
        retryAfterMs: Math.max(drawMs, this.retryAfter(finite)),
        available: Number.isFinite(line.available) ? line.available : 0,
      },
      drawMs,
    );
  }

  /**
   * When to come back: at the ETA, within bounds. A buyer let in but refused by admission control
   * (ETA 0) is spread over a few MIN_RETRY_MS, so that such buyers do not return as one wave.
   */
  private retryAfter(etaMs: number): number {
    const spread = etaMs < MIN_RETRY_MS ? MIN_RETRY_MS * 2 * Math.random() : 0;
    return Math.round(Math.min(MAX_RETRY_MS, Math.max(MIN_RETRY_MS, etaMs) + spread));
  }

  /**
   * A product's line (buyers waiting, how far behind now it serves) and lottery, for its page. A sold-out
   * product keeps nobody waiting (each returning ticket is answered sold_out), and once this process
   * knows it, its line rests unreported: figures kept would only grow stale, so none are shown.
   */
  async view(productId: string): Promise<QueueView | undefined> {
    const line = await this.line(productId);
    const now = this.o.now();
    const draw = line.draw && drawView(line.draw, now);
    const waits = this.waits(line);
    if (!waits && !draw) return undefined;
    // Nobody let in yet (a lottery window before its draw): no serving point, so no lag (null, not Infinity).
    const lag = waits ? Math.max(0, Math.round(now - line.servingPoint)) : 0;
    return {
      waiting: waits ? line.waiting : 0,
      servingLagMs: Number.isFinite(lag) ? lag : null,
      ...(draw && { lottery: draw }),
    };
  }

  /**
   * One product's line for the dashboard: view() as the product page shows it, with its pace and ETA;
   * undefined when nobody waits in it.
   */
  async stats(productId: string): Promise<(QueueView & Omit<LineStats, 'servingLagMs'>) | undefined> {
    const view = await this.view(productId);
    const line = this.known(productId);
    return view && line && this.waits(line) ? { ...this.statsOf(line), ...view } : undefined;
  }

  /** True while buyers wait in the line for a product still on sale (here, or by the last tick's read). */
  private waits(line: WaitingLine): boolean {
    return line.active && line.available !== 0 && !this.o.soldOut(line.productId);
  }

  /** Every line in use here, summed (waiting, rate) or at its worst (lag, ETA), for the metrics. */
  state(): LineStats {
    const total = { waiting: 0, servingLagMs: 0, admittedPerSecond: 0, etaMs: 0 };
    for (const line of this.lines.values()) {
      if (!this.waits(line)) continue;
      const s = this.statsOf(line);
      total.waiting += s.waiting;
      total.admittedPerSecond += s.admittedPerSecond;
      total.servingLagMs = Math.max(total.servingLagMs, s.servingLagMs);
      total.etaMs = Math.max(total.etaMs, s.etaMs);
    }
    return total;
  }

  private statsOf(line: WaitingLine): LineStats {
    return {
      waiting: line.waiting,
      servingLagMs: Math.max(0, Math.round(this.o.now() - line.servingPoint)),
      admittedPerSecond: line.rate,
      etaMs: line.rate > 0 ? Math.round((line.waiting * 1000) / line.rate) : 0,
    };
  }

  /**
   * Sets or clears a product's lottery window (a sale PUT): it opens at the sale's start, or now.
   * Answers what the product page will show of it; other processes read it with their next report.
   */
  async configureLottery(
    productId: string,
    lotterySeconds: number,
    startsAt: number | null,
  ): Promise<DrawView | undefined> {
    const draw = await configureDraw(this.o.redis, productId, lotterySeconds, startsAt ?? this.o.now());
    const line = this.lines.get(productId);
    if (line) line.draw = draw;
    return draw && drawView(draw, this.o.now());
  }

  /** One report per line in use, after any report under way (reports never overlap). */
  tick(): Promise<void> {
    const run = (this.ticking ?? Promise.resolve()).then(() => this.report());
    const tracked: Promise<void> = run
      .catch(() => {})
      .finally(() => {
        if (this.ticking === tracked) this.ticking = undefined;
      });
    this.ticking = tracked;
    return run;
  }

  /** Reports each line's arrivals and its share of this process's spare capacity. */
  private async report(): Promise<void> {
    const capacity = this.capacity;
    if (!capacity) return;
    const throughput = capacity.completed - this.lastCompleted;
    this.lastCompleted = capacity.completed;
    this.measurePace(throughput);
    const idle = Math.max(0, capacity.limit - capacity.running);
    const spare = throughput + (idle * this.tickMs) / RETURN_MS;
    const now = Date.now();
    // A sold-out product's orders are answered from memory, with no Redis command: its line rests.
    const inUse = [...this.lines.values()].filter(
      (l) => now - l.lastUsed < IDLE_MS && !this.o.soldOut(l.productId),
    );
    for (const [id, line] of this.lines) if (now - line.lastUsed >= IDLE_MS) this.lines.delete(id);
    const serving = inUse.filter((l) => l.active && !l.drawing(this.o.now()));
    await Promise.all(
      inUse.map((l) => this.sync(l, serving.includes(l) ? l.share(spare / serving.length) : 0)),
    );
  }

  /**
   * Folds the orders completed since the last report into `completing` and `pace`; those of a report
   * made at the same instant as the one before wait for the next.
   */
  private measurePace(completed: number): void {
    this.unmeasured += completed;
    const now = this.o.now();
    const elapsed = now - this.lastReportAt;
    if (elapsed <= 0) return;
    this.lastReportAt = now;
    const rate = (this.unmeasured * 1000) / elapsed;
    this.unmeasured = 0;
    this.completing += (rate - this.completing) * Math.min(1, elapsed / 1000);
    this.pace = Math.max(this.completing, this.pace * Math.exp(-elapsed / PACE_MEMORY_MS));
  }

  private async sync(line: WaitingLine, advance: number): Promise<void> {
    const arrivals = line.takeArrivals();
    try {
      // The stock is read every tick too, so that the first queued answer already shows it.
      const [view, draw, available] = await Promise.all([
        syncLine(this.o.redis, line.productId, arrivals, advance),
        loadDraw(this.o.redis, line.productId),
        this.o.available(line.productId),
      ]);
      line.update(view ?? { cur: -1, used: 0, rate: 0, buckets: [], counts: [] }, this.o.now());
      line.draw = draw;
      line.available = available;
    } catch {
      // Redis unreachable: the line keeps its last view and reports these arrivals next time.
      line.putBack(arrivals);
    }
  }
}
