// The order record as it travels: written by the decrement script into the shard's reservation
// hash (the outbox), carried as the BullMQ job's data, and inserted as one Postgres row.

/** BullMQ queue name for accepted orders; the job id is the order id so enqueue is idempotent. */
export const ORDER_QUEUE = 'orders';

export interface OrderRecord {
  orderId: string;
  productId: string;
  userId: string;
  quantity: number;
  /** Stock key of the shard the units came from, e.g. `stock:{P:3:1}`. */
  shardKey: string;
  generation: number;
  shardIndex: number;
  /** Fencing token of the shard lock hold that decremented the shard. */
  token: number;
  /** Epoch ms at which the reservation was made. */
  reservedAt: number;
  /**
   * The sale's per-user limit the order was accepted under (0: none), which the Postgres backstop
   * checks it against. Absent in records written before it existed.
   */
  perUserLimit?: number;
}
