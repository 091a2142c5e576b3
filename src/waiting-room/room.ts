// The waiting room of one API process: first come, first served once orders outrun capacity. Every
// process reports its queued arrivals and spare capacity to Redis in one batch per tick per product.
import type { RedisClient } from '../redis/connection.ts';
import type { QueuedError } from './errors.ts';
import { EMPTY_VIEW, WaitingLine } from './line.ts';
import { configureDraw, type DrawView, drawView, loadDraw } from './lottery.ts';
import { Pace } from './pace.ts';
import { queuedAnswer } from './queued.ts';
import { type LineStats, lineStats, type QueueView, totalStats } from './stats.ts';
import { syncLine } from './sync.ts';
import type { Ticket, TicketSigner } from './ticket.ts';

export type { LineStats, QueueView } from './stats.ts';

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

/** A let-in buyer is back within about this long: idle slots are offered at this pace. */
const RETURN_MS = 500;
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
  private pace = new Pace(0);
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
    this.pace = new Pace(this.o.now());
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
    if (arrival.ticket) line.returns.ticketSeen(this.o.now());
    return line.lets(arrival, this.o.now());
  }

  /**
   * True when a buyer the line does not let in yet may take a slot free now: the `free` slots are
   * more than the buyers let in who are expected back for them (abandoned tickets hold no capacity).
   * Never in a lottery window.
   */
  spare(line: WaitingLine, free: number): boolean {
    const now = this.o.now();
    return !line.drawing(now) && free > line.returns.expected(now);
  }

  /** A buyer got its slot: if the line let it in by its place, it is one fewer on the way back. */
  served(line: WaitingLine, arrival: Arrival): void {
    if (arrival.ticket && line.admits(arrival)) line.returns.cameBack(this.o.now());
  }

  /** The 429 queued answer for a buyer who cannot be served now; a first request joins the line. */
  queue(arrival: Arrival, line: WaitingLine): QueuedError {
    // Signing is deterministic: a returning buyer gets back the very ticket it holds, unsigned again.
    const ticket =
      arrival.ticket?.header ?? this.o.signer.issue(arrival.productId, arrival.userId, arrival.firstSeen);
    if (!arrival.ticket) line.arrive(arrival);
    const now = this.o.now();
    const answer = queuedAnswer(arrival, ticket, line, now, this.pace.best);
    line.returns.promised(now + answer.place.retryAfterMs);
    return answer;
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
    return view && line && this.waits(line) ? { ...lineStats(line, this.o.now()), ...view } : undefined;
  }

  /** True while buyers wait in the line for a product still on sale (here, or by the last tick's read). */
  private waits(line: WaitingLine): boolean {
    return line.active && line.available !== 0 && !this.o.soldOut(line.productId);
  }

  /** Every line in use here, summed (waiting, rate) or at its worst (lag, ETA), for the metrics. */
  state(): LineStats {
    const now = this.o.now();
    return totalStats([...this.lines.values()].filter((l) => this.waits(l)).map((l) => lineStats(l, now)));
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
    this.pace.measure(throughput, this.o.now());
    const idle = Math.max(0, capacity.limit - capacity.running);
    const spare = throughput + (idle * this.tickMs) / RETURN_MS;
    const now = Date.now();
    // A sold-out product's orders are answered from memory, with no Redis command: its line rests.
    const inUse = [...this.lines.values()].filter(
      (l) => now - l.lastUsed < IDLE_MS && !this.o.soldOut(l.productId),
    );
    for (const [id, line] of this.lines) if (now - line.lastUsed >= IDLE_MS) this.lines.delete(id);
    const serving = inUse.filter((l) => l.active && !l.drawing(this.o.now()));
    const each = (part: number) => part / serving.length;
    await Promise.all(
      inUse.map((l) =>
        serving.includes(l) ? this.sync(l, l.share(each(spare)), each(throughput)) : this.sync(l, 0),
      ),
    );
  }

  /** `used`: of `advance`, the capacity orders used (see WaitingLine.update). */
  private async sync(line: WaitingLine, advance: number, used = 0): Promise<void> {
    const arrivals = line.takeArrivals();
    line.returns.settle(this.o.now());
    try {
      // The stock is read every tick too, so that the first queued answer already shows it.
      const [view, draw, available] = await Promise.all([
        syncLine(this.o.redis, line.productId, arrivals, advance),
        loadDraw(this.o.redis, line.productId),
        this.o.available(line.productId),
      ]);
      line.update(view ?? EMPTY_VIEW, this.o.now(), used);
      line.draw = draw;
      line.available = available;
    } catch {
      // Redis unreachable: the line keeps its last view and reports these arrivals next time.
      line.putBack(arrivals);
    }
  }
}
