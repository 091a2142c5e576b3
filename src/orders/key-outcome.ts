// What placing an order asks and answers, and what an Idempotency-Key remembers of it: the order
// placed (or, in keys written by earlier versions, a refusal or the HTTP answer itself).
import type { FlashsaleError } from '../errors.ts';
import { SoldOutError } from '../inventory/errors.ts';
import { LimitExceededError } from './errors.ts';
import type { OrderRecord } from './order.ts';

/** An order as asked for (validated by the caller). */
export interface OrderRequest {
  productId: string;
  userId: string;
  quantity: number;
}

/** What placing an order answers: the order (also what a retried Idempotency-Key answers). */
export interface PlacedOrder {
  orderId: string;
  productId: string;
  userId: string;
  quantity: number;
  /** True when an Idempotency-Key answered an order placed by an earlier request (nothing placed now). */
  replayed: boolean;
}

/**
 * What an Idempotency-Key remembers: the order placed. (Earlier versions remembered refusals too;
 * such records are still replayed until their TTL ends.)
 */
export type KeyOutcome =
  | { order: Omit<PlacedOrder, 'replayed'> }
  | { refused: { code: string; details: Record<string, unknown> } };
/** How earlier versions stored a key's outcome: the HTTP answer itself. Still read, for keys they wrote. */
export type LegacyOutcome = { status: number; body: Record<string, unknown> };

export function placed(r: OrderRecord): Omit<PlacedOrder, 'replayed'> {
  return { orderId: r.orderId, productId: r.productId, userId: r.userId, quantity: r.quantity };
}

export function fromStored(stored: KeyOutcome | LegacyOutcome): KeyOutcome {
  if (!('status' in stored)) return stored;
  const { body } = stored;
  if (stored.status !== 202) return { refused: { code: String(body.error), details: body } };
  const { orderId, productId, userId, quantity } = body as Omit<PlacedOrder, 'replayed'>;
  return { order: { orderId, productId, userId, quantity } };
}

/** The refusal a key remembered, thrown again as it was (the request is the same, so is the message). */
export function refusal(
  req: OrderRequest,
  r: { code: string; details: Record<string, unknown> },
): FlashsaleError {
  return r.code === 'limit_exceeded'
    ? new LimitExceededError(req.productId, Number(r.details.limit))
    : new SoldOutError(req.productId, req.quantity, Number(r.details.available ?? 0));
}
