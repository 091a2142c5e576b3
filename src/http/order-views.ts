// What GET /api/orders/:id shows to whom: the admin sees the whole record; a buyer sees their own
// order without the internals (shard, fencing token, generation), and anyone else sees no order.
// Both carry the payment deadline as ISO 8601 (`paymentDueAt`, like the sale's `startsAt`) besides
// `payBy`, the same instant in epoch ms, kept for the clients that read it.
import { UnknownOrderError } from '../orders/errors.ts';
import type { OrderView } from '../orders/order-status.ts';
import type { Viewer } from './buyer-identity.ts';

/** The payment deadline (Redis' clock), for a sale that needs payment. */
interface Deadline {
  /** Epoch ms (kept for compatibility). */
  payBy?: number;
  /** The same instant as ISO 8601, UTC. */
  paymentDueAt?: string;
}

/** The buyer's view: what they ordered and its state, nothing of how it is stored. */
export interface PublicOrderView extends Deadline {
  orderId: string;
  status: OrderView['status'];
  productId: string;
  userId: string;
  quantity: number;
}

/**
 * The order as `viewer` may see it; another buyer's order is UnknownOrderError (404), the same answer
 * as an order that does not exist, so an id tells nothing to whom it does not belong.
 */
export function visibleOrder(viewer: Viewer, order: OrderView): (OrderView & Deadline) | PublicOrderView {
  if (viewer.kind === 'admin') return { ...order, ...deadline(order.payBy) };
  if (viewer.kind === 'buyer' && viewer.buyer !== order.userId) throw new UnknownOrderError(order.orderId);
  const { orderId, status, productId, userId, quantity, payBy } = order;
  return { orderId, status, productId, userId, quantity, ...deadline(payBy) };
}

function deadline(payBy: number | undefined): Deadline {
  return payBy === undefined ? {} : { payBy, paymentDueAt: new Date(payBy).toISOString() };
}
