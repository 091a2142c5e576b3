// The order record as it travels (reservation, job data, row; its shape is defined beside the orders
// table in src/db) and the BullMQ queue that carries it from the API to the writer.
export type { OrderRecord } from '../db/orders-repo.ts';

/** BullMQ queue name for accepted orders; the job id is the order id so enqueue is idempotent. */
export const ORDER_QUEUE = 'orders';
