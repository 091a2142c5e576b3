// What GET /api/orders/:id shows to whom: the admin sees the whole record; a buyer sees their own
// order without the internals (shard, fencing token, generation), and anyone else sees no order.
import { UnknownOrderError } from '../orders/errors.ts';
import type { OrderView } from '../orders/order-status.ts';
import type { Viewer } from './buyer-identity.ts';

/** The buyer's view: what they ordered and its state, nothing of how it is stored. */
export interface PublicOrderView {
  orderId: string;
  status: OrderView['status'];
  productId: string;
  userId: string;
  quantity: number;
  /** The payment deadline (epoch ms, Redis' clock), for a sale that needs payment. */
  payBy?: number;
}

/**
 * The order as `viewer` may see it; another buyer's order is UnknownOrderError (404), the same answer
 * as an order that does not exist, so an id tells nothing to whom it does not belong.
 */
export function visibleOrder(viewer: Viewer, order: OrderView): OrderView | PublicOrderView {
  if (viewer.kind === 'admin') return order;
  if (viewer.kind === 'buyer' && viewer.buyer !== order.userId) throw new UnknownOrderError(order.orderId);
  const { orderId, status, productId, userId, quantity, payBy } = order;
  return { orderId, status, productId, userId, quantity, ...(payBy !== undefined && { payBy }) };
}
