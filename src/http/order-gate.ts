// The door of POST /api/orders, in memory before any Redis round trip: the sold-out fast path, the
// rate limits, then the waiting room (when on) and admission control.
import { performance } from 'node:perf_hooks';
import { BusyError, outOfStock } from '../inventory/errors.ts';
import { InvalidTicketError } from '../waiting-room/errors.ts';
import type { Arrival, WaitingRoom } from '../waiting-room/room.ts';
import {
  AdmissionControl,
  type AdmissionOptions,
  type LoopSignals,
  type Release,
  type ShedReason,
} from './admission.ts';
import { RateLimitedError } from './errors.ts';
import { type RateLimit, TokenBuckets } from './token-buckets.ts';

export interface OrderGateOptions {
  admission: AdmissionOptions;
  /** Per buyer (userId); undefined: no limit. */
  perUser?: RateLimit;
  /** Per client address (req.ip, after `trust proxy`); undefined: no limit. */
  perAddress?: RateLimit;
  /** True when the product is known sold out in this process: such orders cost nothing, never gated. */
  isSoldOut: (productId: string) => boolean;
  /** The process's event-loop delay and utilization (an EventLoopLag). */
  loop?: LoopSignals;
  onShed?: (reason: ShedReason) => void;
  onRateLimited?: (by: 'user' | 'address') => void;
  /** [0, 1): spreads Retry-After so refused clients do not come back in one wave. */
  random?: () => number;
  /** First come, first served under excess demand (WAITING_ROOM=on); without it, 429 busy. */
  room?: WaitingRoom;
  onInvalidTicket?: () => void;
  /** What every order pays outside this process (AdmissionOptions.floorMs): the lock service's round trip. */
  floorMs?: () => number;
}

/** How an order goes through the gate. */
export interface EntryOptions {
  /** Counted by the rate limits (default true; not an order the service places for a held buyer). */
  limited?: boolean;
  /**
   * May wait in admission control's queue for a slot (default true). False: a buyer the line lets in
   * but no slot is free for is queued at once (a streaming buyer, then held and told where it stands).
   */
  patient?: boolean;
}

/** An order let through the gate: free its slot when answered; a ticket's id keys its idempotency. */
export interface Entry {
  release: Release;
  ticketId?: string;
}

/** What the gate reads of an order. */
export interface GateOrder {
  productId: string;
  userId: string;
  quantity: number;
}

/** Refused orders come back after 1..(1 + RETRY_SPREAD_S) seconds, spread at random. */
const RETRY_SPREAD_S = 2;

/** A permit that frees nothing: the order was not counted (sold-out fast path). */
const NOTHING: Release = () => {};

/**
 * Decides, in microseconds, whether an order may go on to the order use case. `enter` answers a
 * Release (call it when the order is answered) or throws RateLimitedError (429 rate_limited) or
 * BusyError (429 busy), both with a jittered Retry-After. A refused order touched nothing, so its
 * retry with the same Idempotency-Key is a first attempt.
 */
export class OrderGate {
  readonly admission: AdmissionControl;
  private readonly users?: TokenBuckets;
  private readonly addresses?: TokenBuckets;
  private readonly random: () => number;

  constructor(private readonly o: OrderGateOptions) {
    // With the room on, a refused order is a queued buyer who comes back at its ETA, not a stream of
    // retries to make room for: cutting the limit while the loop is saturated would only slow the
    // line, lengthen every ETA and multiply the polls (see AdmissionOptions.onSaturation).
    const admission: AdmissionOptions = {
      ...o.admission,
      floorMs: o.floorMs,
      ...(o.room ? { onSaturation: 'hold' as const } : {}),
    };
    this.admission = new AdmissionControl(admission, o.loop);
    if (o.perUser) this.users = new TokenBuckets(o.perUser);
    if (o.perAddress) this.addresses = new TokenBuckets(o.perAddress);
    this.random = o.random ?? Math.random;
  }

  /**
   * `address`: the client's, asked only with a per-address limit (req.ip runs TRUST_PROXY's rules);
   * `waitedMs`: how long ago the request was read (a first request's place is then); `how`: see
   * EntryOptions.
   */
  async enter(
    order: GateOrder,
    address: () => string | undefined,
    ticket?: string,
    waitedMs = 0,
    how: EntryOptions = {},
  ): Promise<Entry> {
    const { limited = true, patient = true } = how;
    const arrival = this.arrival(order, ticket, waitedMs);
    // A ticket goes along even here: if it placed an order, that order is its answer, not sold_out.
    if (this.o.isSoldOut(order.productId)) return { release: NOTHING, ticketId: arrival?.ticket?.id };
    if (limited) this.rateLimit(order, address);
    if (this.o.room && arrival) return this.wait(this.o.room, arrival, order.quantity, patient);
    const admitted = await this.admission.acquire();
    if (typeof admitted === 'function') return { release: admitted };
    throw this.shed(admitted, order.productId);
  }

  private rateLimit(order: GateOrder, address: () => string | undefined): void {
    const now = performance.now();
    if (this.addresses) {
      const from = address();
      if (from !== undefined) this.limit(this.addresses.take(from, now), 'address');
    }
    if (this.users) this.limit(this.users.take(order.userId, now), 'user');
  }

  /** The buyer's place by its ticket (InvalidTicketError when it is not genuine), or now. */
  private arrival(order: GateOrder, ticket: string | undefined, waitedMs: number): Arrival | undefined {
    try {
      return this.o.room?.arrival(order, ticket, waitedMs);
    } catch (err) {
      if (err instanceof InvalidTicketError) this.o.onInvalidTicket?.();
      throw err;
    }
  }

  /**
   * The waiting room's door: while buyers wait, those whose first request the line has reached go on
   * to admission control; anyone else takes a slot only if one is free now beyond those the buyers
   * let in and expected back will need (work-conserving: see WaitingRoom.spare). Anyone else, and
   * anyone admission control refuses, is answered 429 queued.
   */
  private async wait(
    room: WaitingRoom,
    arrival: Arrival,
    quantity: number,
    patient: boolean,
  ): Promise<Entry> {
    const line = room.known(arrival.productId) ?? (await room.line(arrival.productId));
    if (room.lets(line, arrival)) {
      // Its turn (a ticket that placed an order had its turn before): the order use case answers,
      // with the ticket as the order's key, so a ticket whose order was placed gets that order.
      const admitted = patient ? await this.admission.acquire() : this.admission.tryAcquire();
      if (typeof admitted === 'function') {
        room.served(line, arrival);
        return { release: admitted, ticketId: arrival.ticket?.id };
      }
    } else if (line.available < quantity) {
      // Still waiting, and not enough left for it: told at once, from memory.
      throw outOfStock(arrival.productId, quantity, Math.max(0, line.available));
    } else if (room.spare(line, this.admission.limit - this.admission.running)) {
      // Never waits: a slot is taken only if it is free this moment, ahead of nobody queued for one.
      const admitted = this.admission.tryAcquire();
      if (admitted) return { release: admitted, ticketId: arrival.ticket?.id };
    }
    throw room.queue(arrival, line);
  }

  /**
   * The Retry-After (seconds) of the 429 busy an order arriving now would get from admission control,
   * decided before its request is read: the order door answers it without reading the body (order-door.ts).
   * Undefined: let it in. No error is built: under a herd this runs thousands of times a second.
   */
  refuseOnArrival(): number | undefined {
    // A queued answer names the buyer and product, so it needs the request read: no early refusal.
    if (this.o.room) return undefined;
    const reason = this.admission.refusalOnArrival();
    if (reason === undefined) return undefined;
    this.o.onShed?.(reason);
    return this.retryAfter();
  }

  private shed(reason: ShedReason, productId: string): BusyError {
    this.o.onShed?.(reason);
    return new BusyError(productId, this.retryAfter());
  }

  /** 1..(1 + RETRY_SPREAD_S) seconds at random. */
  private retryAfter(): number {
    return 1 + Math.floor(this.random() * (RETRY_SPREAD_S + 1));
  }

  private limit(waitSeconds: number, by: 'user' | 'address'): void {
    if (waitSeconds === 0) return;
    this.o.onRateLimited?.(by);
    throw new RateLimitedError(by, Math.ceil(waitSeconds + this.random()));
  }
}
