// The waiting room's answers as typed errors: 429 queued (come back later with your ticket) and
// 400 invalid_ticket (altered, expired, or presented for another product or buyer).
import { FlashsaleError } from '../errors.ts';

/** Where a queued buyer stands; the body of a 429 queued besides error and message. */
export interface Place {
  ticket: string;
  /** Buyers ahead (an estimate). */
  position: number;
  /** When the service expects to serve this buyer, ms from now. */
  etaMs: number;
  /** When to come back, ms from now (never sooner). */
  retryAfterMs: number;
  /** Units still on sale. */
  available: number;
}

export class QueuedError extends FlashsaleError {
  /** An expected answer, thousands a second in a herd: no stack trace (see CodedError). */
  static readonly refusal = true;
  readonly retryAfterSeconds: number;
  /** The answer's headers besides Retry-After: the ticket to come back with. */
  readonly headers: Record<string, string>;

  constructor(
    productId: string,
    readonly place: Place,
  ) {
    super('queued', `"${productId}" has more buyers than it can serve right now: keep your place`, {
      ...place,
    });
    this.retryAfterSeconds = Math.max(1, Math.ceil(place.retryAfterMs / 1000));
    this.headers = { 'Queue-Ticket': place.ticket };
  }
}

export class InvalidTicketError extends FlashsaleError {
  /** A client's mistake, not a fault: no stack trace (see CodedError). */
  static readonly refusal = true;

  constructor(reason: string) {
    super('invalid_ticket', `Queue-Ticket refused: ${reason}`);
  }
}
