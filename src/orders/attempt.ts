// One try at placing an order, and what makes its outcome knowable when its reply is lost.
//
// Every order id an attempt may create ends in the attempt's ticket (`<P>.<gen>.<shard>.<ticket>`),
// and every reservation it sends carries a deadline in Redis server time past which reserve.lua
// refuses it. So once the server's clock is past the attempt's fence, nothing the attempt sent can
// still take effect, and looking for its ticket in the reservation hashes and in Postgres tells for
// certain whether it placed an order. That is how a request whose connection broke mid-reservation,
// or a retry of an Idempotency-Key whose first request died, learns the truth instead of guessing.
import { randomBytes } from 'node:crypto';

export interface Attempt {
  /** 24 hex digits: the random part of every order id this attempt may create; also its claim id. */
  readonly ticket: string;
  /** No reservation of this attempt may take effect after this server time (ms). */
  readonly deadline: number;
  /** Latest deadline a reservation of this attempt was actually sent with (≤ deadline; 0: none sent). */
  fence: number;
}

/** Clock skew allowed between the Redis node that ran a reservation and the one asked for the time. */
export const CLOCK_SKEW_MARGIN_MS = 250;

export function newAttempt(deadline: number): Attempt {
  return { ticket: randomBytes(12).toString('hex'), deadline, fence: 0 };
}

export const TICKET_PATTERN = /^[0-9a-f]{24}$/;
