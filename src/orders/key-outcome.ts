// What placing an order asks and answers, and what an Idempotency-Key remembers of it: the order
// placed (a refusal stores nothing under the key).
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

/** What an Idempotency-Key remembers: the order placed. */
export type KeyOutcome = { order: Omit<PlacedOrder, 'replayed'> };

export function placed(r: OrderRecord): Omit<PlacedOrder, 'replayed'> {
  return { orderId: r.orderId, productId: r.productId, userId: r.userId, quantity: r.quantity };
}
