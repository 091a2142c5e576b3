// One try at placing an order: a random ticket that ends every order id it may create, and a deadline
// in Redis server time past which none of its reservations can take effect (so a lost reply is knowable).
import { randomFillSync } from 'node:crypto';
import { PRODUCT_ID_PATTERN } from '../inventory/keys.ts';

export interface Attempt {
  /** 24 hex digits: the random part of every order id this attempt may create; also its claim id. */
  readonly ticket: string;
  /** No reservation of this attempt may take effect after this server time (ms). */
  readonly deadline: number;
}

/** Clock skew allowed between the Redis node that ran a reservation and the one asked for the time. */
export const CLOCK_SKEW_MARGIN_MS = 250;

export function newAttempt(deadline: number): Attempt {
  return { ticket: newTicket(), deadline };
}

const TICKET_BYTES = 12;
/** Random bytes for 256 tickets, drawn at once: one randomFillSync per ticket cost more than the rest of newAttempt. */
const pool = Buffer.alloc(TICKET_BYTES * 256);
let used = pool.length;

/** 24 random hex digits (96 bits from the crypto RNG, taken from a pool filled 256 tickets at a time). */
export function newTicket(): string {
  if (used === pool.length) {
    randomFillSync(pool);
    used = 0;
  }
  used += TICKET_BYTES;
  return pool.toString('hex', used - TICKET_BYTES, used);
}

// Order ids: `<product>.<generation>.<shard>.<ticket>`. The shard part lets status find a reservation
// without an index; the ticket part lets an attempt be looked up on every shard it may have used.
// Dots separate the parts: product ids cannot contain one, and BullMQ job ids must not contain ':'.
const ORDER_ID = /^([A-Za-z0-9_-]{1,64})\.(\d{1,15})\.(\d{1,4})\.([0-9a-f]{24})$/;

export function orderIdFor(
  shard: { productId: string; generation: number; index: number },
  ticket: string,
): string {
  return `${shard.productId}.${shard.generation}.${shard.index}.${ticket}`;
}

export function parseOrderId(
  orderId: string,
): { productId: string; generation: number; index: number; ticket: string } | null {
  const m = ORDER_ID.exec(orderId);
  if (!m?.[1] || !PRODUCT_ID_PATTERN.test(m[1])) return null;
  return { productId: m[1], generation: Number(m[2]), index: Number(m[3]), ticket: m[4] as string };
}
