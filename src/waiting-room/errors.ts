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

/**
 * Why this buyer waits, in its own case: a lottery window still open (even for a lone buyer), buyers
 * ahead, or none ahead but no capacity free this instant.
 */
function queuedMessage(productId: string, position: number, drawMs: number): string {
  if (drawMs > 0) {
    const seconds = Math.ceil(drawMs / 1000);
    return `"${productId}" is in its lottery window for ${seconds} s more: every buyer who comes before it closes gets a place drawn at random; come back with your ticket then`;
  }
  if (position > 0) {
    return `"${productId}" has more buyers than it can serve right now: ${position} ahead of you, keep your place`;
  }
  return `"${productId}" is busy this instant: you are next in line, come back with your ticket`;
}

export class QueuedError extends FlashsaleError {
  /** An expected answer, thousands a second in a herd: no stack trace (see CodedError). */
  static readonly refusal = true;
  readonly retryAfterSeconds: number;
  /** The answer's headers besides Retry-After: the ticket to come back with. */
  readonly headers: Record<string, string>;

  /** `drawMs`: how long the product's lottery window stays open (0: none is open). */
  constructor(
    productId: string,
    readonly place: Place,
    drawMs = 0,
  ) {
    super('queued', queuedMessage(productId, place.position, drawMs), { ...place });
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
