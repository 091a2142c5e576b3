// The waiting room of one API process: first come, first served once orders outrun capacity. Every
// process reports its queued arrivals and spare capacity to Redis in one batch per tick per product.
import type { RedisClient } from '../redis/connection.ts';
import { QueuedError } from './errors.ts';
import { WaitingLine } from './line.ts';
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
  /** Units of a product still on sale (read once per tick for lines in use). */
  available: (productId: string) => Promise<number>;
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

/** Waiting buyers come back at the earliest this soon, at the latest this late. */
const MIN_RETRY_MS = 250;
const MAX_RETRY_MS = 5000;
/** A let-in buyer is back within about this long: idle slots are offered at this pace. */
const RETURN_MS = 1000;
/** A line nobody here asked about for this long stops syncing. */
const IDLE_MS = 30_000;

/**
 * @example
 * const room = new WaitingRoom({ redis, now: () => clock.now(), signer, available });
 * room.start(admission);
 * const arrival = room.arrival(order, req.get('queue-ticket'));
 * if (!(await room.mayEnter(arrival))) throw room.queue(arrival);
 */
export class WaitingRoom {
  private readonly lines = new Map<string, WaitingLine>();
  private readonly bucketMs: number;
  private readonly tickMs: number;
  private timer: NodeJS.Timeout | undefined;
  private lastCompleted = 0;
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
    this.timer = setInterval(() => {
      this.ticking ??= this.tick().finally(() => {
        this.ticking = undefined;
      });
    }, this.tickMs);
    this.timer.unref();
  }

  async stop(): Promise<void> {
    clearInterval(this.timer);
    await this.ticking;
  }

  /** The buyer's place: its ticket's first-seen time (verified), or now. Throws InvalidTicketError. */
  arrival(order: { productId: string; userId: string }, ticketHeader: string | undefined): Arrival {
    const now = this.o.now();
    if (ticketHeader === undefined) return { ...order, firstSeen: now };
    const ticket = this.o.signer.verify(ticketHeader, order.productId, order.userId, now);
    return { ...order, firstSeen: ticket.firstSeen, ticket };
  }

  /** The product's line in this process (created on first use, read from Redis once). */
  async line(productId: string): Promise<WaitingLine> {
    let line = this.lines.get(productId);
    if (!line) {
      line = new WaitingLine(productId, this.bucketMs);
      this.lines.set(productId, line);
      await this.sync(line, 0);
    }
    line.lastUsed = Date.now();
    return line;
  }

  /** True when the line lets this buyer in now: there is none, or the buyer's time has come. */
  async mayEnter(arrival: Arrival): Promise<boolean> {
    const line = await this.line(arrival.productId);
    return !line.active || line.admits(arrival.firstSeen);
  }

  /** Units on sale as last read, or undefined when not known yet. */
  available(productId: string): number | undefined {
    const a = this.lines.get(productId)?.available;
    return a === undefined || a === Number.POSITIVE_INFINITY ? undefined : a;
  }

  /** The 429 queued answer for a buyer who cannot be served now; a first request joins the line. */
  queue(arrival: Arrival, line: WaitingLine): QueuedError {
    // Signing is deterministic: a returning buyer gets back the very ticket it holds.
    const ticket = this.o.signer.issue(arrival.productId, arrival.userId, arrival.firstSeen);
    if (!arrival.ticket) line.arrive(arrival.firstSeen);
    const { position, etaMs } = line.admits(arrival.firstSeen)
      ? { position: 0, etaMs: 0 }
      : line.standing(arrival.firstSeen);
    const finite = Number.isFinite(etaMs) ? etaMs : MAX_RETRY_MS;
    return new QueuedError(arrival.productId, {
      ticket,
      position,
      etaMs: finite,
      retryAfterMs: Math.min(MAX_RETRY_MS, Math.max(MIN_RETRY_MS, finite)),
      available: Number.isFinite(line.available) ? line.available : 0,
    });
  }

  /** Lines waiting and how far behind now each one serves, for the product page and the metrics. */
  view(productId: string): { waiting: number; servingLagMs: number } | undefined {
    const line = this.lines.get(productId);
    if (!line?.active) return undefined;
    return { waiting: line.waiting, servingLagMs: Math.max(0, Math.round(this.o.now() - line.servingPoint)) };
  }

  /** One report per line in use: arrivals and this process's share of spare capacity. */
  async tick(): Promise<void> {
    const capacity = this.capacity;
    if (!capacity) return;
    const throughput = capacity.completed - this.lastCompleted;
    this.lastCompleted = capacity.completed;
    const idle = Math.max(0, capacity.limit - capacity.running);
    const spare = throughput + (idle * this.tickMs) / RETURN_MS;
    const now = Date.now();
    const inUse = [...this.lines.values()].filter((l) => now - l.lastUsed < IDLE_MS);
    for (const [id, line] of this.lines) if (now - line.lastUsed >= IDLE_MS) this.lines.delete(id);
    const waiting = inUse.filter((l) => l.active).length;
    await Promise.all(inUse.map((l) => this.sync(l, l.active ? l.share(spare / waiting) : 0)));
  }

  private async sync(line: WaitingLine, advance: number): Promise<void> {
    const arrivals = line.takeArrivals();
    try {
      const [view, available] = await Promise.all([
        syncLine(this.o.redis, line.productId, arrivals, advance),
        this.o.available(line.productId),
      ]);
      line.update(view ?? { cur: -1, used: 0, rate: 0, buckets: [], counts: [] });
      line.available = available;
    } catch {
      // Redis unreachable: the line keeps its last view and reports these arrivals next time.
      line.putBack(arrivals);
    }
  }
}
