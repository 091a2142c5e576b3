// The waiting buyers this process holds on their streams, per product: one pass a tick places the
// orders of those the line has reached, tells the others where they stand, and ends every stream at a sell-out.
import type { ServerResponse } from 'node:http';
import { performance } from 'node:perf_hooks';
import { UnavailableError } from '../../errors.ts';
import { outOfStock } from '../../inventory/errors.ts';
import type { OrderOutcome } from '../../metrics.ts';
import type { Place, WaitingRoom } from '../../waiting-room/index.ts';
import { type Answer, errorAnswer } from '../errors.ts';
import type { OrderAnswer, OrderCall } from '../order-intake.ts';
import { HeldBuyer, type Standing, type StreamEvent } from './held-buyer.ts';

export interface StreamHolderOptions {
  /** Streams held at most (WAITING_ROOM_MAX_STREAMS); past it a waiting buyer polls. */
  max: number;
  room: WaitingRoom;
  /** True when this process knows the product sold out: its streams end with 409 at once. */
  soldOut: (productId: string) => boolean;
  /** The order of a held buyer whose turn came, placed as a polling buyer's would be (OrderIntake.answer). */
  place: (call: OrderCall) => Promise<OrderAnswer>;
  /**
   * Held buyers' orders under way at most (admission control's limit): the rest of those the line
   * let in wait for the next pass, instead of each being refused by a full admission queue and tried
   * again every pass.
   */
  placing: () => number;
  /** A stream's outcome written (or decided after its client left), and how long it was held (s). */
  onResult?: (outcome: OrderOutcome, seconds: number) => void;
  onEvent?: (event: StreamEvent) => void;
  /** A waiting buyer who asked for a stream was answered 429 queued: the bound was reached. */
  onRefused?: () => void;
  /** How often the held buyers are passed over (ms). Default 100, the waiting room's tick. */
  tickMs?: number;
}

/**
 * Holds waiting buyers' streams: no timer per stream, one pass per tick over each product's streams,
 * and every event of a pass written in that pass. A buyer whose stream closed before its turn leaves
 * (nothing is ordered for it); its ticket keeps its place if it comes back.
 *
 * @example
 * const holder = new StreamHolder({ max: 10_000, room, soldOut, place: (call) => intake.answer(() => call, log) });
 * if (!holder.hold(res, call, place, requestId)) send(res, queuedAnswer);
 */
export class StreamHolder {
  private readonly products = new Map<string, Set<HeldBuyer>>();
  private count = 0;
  /** Orders of held buyers under way. */
  private underWay = 0;
  private timer: NodeJS.Timeout | undefined;
  private closed = false;

  constructor(private readonly o: StreamHolderOptions) {}

  /** Streams held now. */
  get size(): number {
    return this.count;
  }

  get max(): number {
    return this.o.max;
  }

  /** True while another stream can be held. */
  hasRoom(): boolean {
    return !this.closed && this.count < this.o.max;
  }

  /**
   * Holds the buyer of `call` (answered 429 queued with `place`) on `res`: writes the stream's head and
   * first event. False when the bound is reached (the caller answers the 429 itself).
   */
  hold(res: ServerResponse, call: OrderCall, place: Place, requestId: string): boolean {
    if (!this.hasRoom()) {
      this.o.onRefused?.();
      return false;
    }
    const order = call.body as { productId: string; userId: string };
    const arrival = this.o.room.arrival(order, place.ticket);
    const now = performance.now();
    const buyer = new HeldBuyer(res, { ...call, ticket: place.ticket, held: true }, arrival, now);
    buyer.open(requestId, standing(place), now);
    this.o.onEvent?.('queued');
    this.add(buyer);
    res.once('close', () => this.remove(buyer));
    return true;
  }

  /** Ends every stream (503 unavailable: come back with your ticket) and holds no more. */
  close(): void {
    this.closed = true;
    const answer = errorAnswer(new UnavailableError('this API process (shutting down)'));
    for (const buyers of this.products.values())
      for (const b of buyers) this.finish(b, answer, 'unavailable');
    clearInterval(this.timer);
  }

  private add(buyer: HeldBuyer): void {
    let buyers = this.products.get(buyer.productId);
    if (!buyers) {
      buyers = new Set();
      this.products.set(buyer.productId, buyers);
    }
    buyers.add(buyer);
    this.count++;
    if (!this.timer) {
      this.timer = setInterval(() => this.pass(), this.o.tickMs ?? 100);
      this.timer.unref();
    }
  }

  private remove(buyer: HeldBuyer): void {
    buyer.done = true;
    const buyers = this.products.get(buyer.productId);
    if (!buyers?.delete(buyer)) return;
    this.count--;
    if (buyers.size === 0) this.products.delete(buyer.productId);
    if (this.count === 0) {
      clearInterval(this.timer);
      this.timer = undefined;
    }
  }

  /** One pass over every product's streams. */
  private pass(): void {
    const now = performance.now();
    for (const [productId, buyers] of this.products) {
      if (this.o.soldOut(productId)) this.soldOut(buyers);
      else this.advance(productId, buyers, now);
    }
  }

  /** Sold out: every stream told at once, from memory (a held stream's ticket never placed an order). */
  private soldOut(buyers: Set<HeldBuyer>): void {
    for (const b of buyers) if (!b.placing) this.tooFew(b, 0);
  }

  /**
   * Places the orders of the buyers the line has reached; tells the others where they stand, or that
   * too few units are left for them (the line's stock, read each tick, as a polling buyer is told).
   */
  private advance(productId: string, buyers: Set<HeldBuyer>, now: number): void {
    const room = this.o.room;
    const line = room.known(productId);
    if (!line) return;
    for (const b of buyers) {
      if (b.placing) continue;
      if (room.lets(line, b.arrival)) {
        if (this.underWay < this.o.placing()) void this.place(b);
      } else if (line.available < b.quantity) this.tooFew(b, Math.max(0, line.available));
      else if (b.due(now)) this.event(b.progress(standing(room.queue(b.arrival, line).place), now));
      else this.event(b.keepAlive(now));
    }
  }

  private tooFew(b: HeldBuyer, available: number): void {
    this.finish(
      b,
      errorAnswer(outOfStock(b.productId, b.quantity, available)),
      available > 0 ? 'insufficient_stock' : 'sold_out',
    );
  }

  /** The buyer's turn: its order placed; still queued (no capacity this moment), it keeps waiting. */
  private async place(b: HeldBuyer): Promise<void> {
    b.placing = true;
    this.underWay++;
    const { answer, outcome } = await this.o.place(b.call).finally(() => {
      this.underWay--;
      b.placing = false;
    });
    if (outcome === 'queued') {
      // Let in, but admission control had no room this moment: it waits for the next pass.
      if (!b.done) this.event(b.progress(standing(answer.body as unknown as Place), performance.now()));
      return;
    }
    this.finish(b, answer, outcome);
  }

  private finish(b: HeldBuyer, answer: Answer, outcome: OrderOutcome): void {
    // Decided after its client left (the order placed as its turn came): counted, nobody to tell.
    this.o.onResult?.(outcome, (performance.now() - b.heldSince) / 1000);
    if (!b.done) {
      b.finish(answer);
      this.o.onEvent?.('result');
    }
    this.remove(b);
  }

  private event(event: StreamEvent | undefined): void {
    if (event) this.o.onEvent?.(event);
  }
}

/** A queued answer's place as a `queued` event tells it. */
function standing({ ticket, position, etaMs, available }: Place): Standing {
  return { ticket, position, etaMs, available };
}
