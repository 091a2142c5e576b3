// Producer side of the orders queue: the job options, and the idempotent enqueue of one order
// (jobId = orderId) or of a batch of orders. The writer registers the matching backoff strategy.
import { type DefaultJobOptions, Queue, type RedisOptions } from 'bullmq';
import { ORDER_QUEUE, type OrderRecord } from './order.ts';

/**
 * A Redis URL or ioredis-style options (BullMQ's own type: ioredis' allows `retryStrategy: null`,
 * which BullMQ's does not). Each BullMQ object opens its own connections from it.
 */
export type QueueConnection = string | RedisOptions;

/**
 * Name of the retry schedule. It must NOT be 'exponential': BullMQ only consults a worker's custom
 * backoffStrategy for types it does not know, and its built-in exponential has no cap.
 */
export const ORDER_BACKOFF_TYPE = 'capped-exponential';
const ORDER_BACKOFF_BASE_MS = 200;
export const ORDER_BACKOFF_MAX_MS = 5_000;

/** 200, 400, 800 ... ms, never more than 5 s: while Postgres is down, jobs wait and keep retrying. */
export function orderBackoffDelay(attemptsMade: number): number {
  const exponent = Math.min(Math.max(attemptsMade - 1, 0), 30);
  return Math.min(ORDER_BACKOFF_BASE_MS * 2 ** exponent, ORDER_BACKOFF_MAX_MS);
}

export const ORDER_JOB_OPTIONS = {
  // An accepted order must never be dropped for lack of attempts; only invalid data fails a job.
  attempts: 1_000_000,
  backoff: { type: ORDER_BACKOFF_TYPE, delay: ORDER_BACKOFF_BASE_MS },
  // Recent completions are kept so a replayed enqueue (sweeper) of a just-finished order is a no-op.
  removeOnComplete: { count: 1000 },
  removeOnFail: false,
} as const satisfies DefaultJobOptions;

export function toRedisOptions(connection: QueueConnection): RedisOptions {
  return typeof connection === 'string' ? { url: connection } : connection;
}

/**
 * Data of a job of the orders queue: one order (job id = order id), or a batch of orders one API
 * process accepted within a few milliseconds (job id = `batch.` + its first order's id). Each order
 * keeps its own id as its idempotence key (the row's primary key, the reservation's field).
 */
export type OrderJobData = OrderRecord | OrderBatch;

export interface OrderBatch {
  orders: OrderRecord[];
}

export type OrderQueue = Queue<OrderJobData>;

export function createOrderQueue(connection: QueueConnection): OrderQueue {
  return new Queue<OrderJobData>(ORDER_QUEUE, {
    connection: toRedisOptions(connection),
    defaultJobOptions: ORDER_JOB_OPTIONS,
  });
}

/** Adds the order; a job with the same id already queued (or recently completed) makes this a no-op. */
export async function enqueueOrder(queue: OrderQueue, record: OrderRecord): Promise<void> {
  await queue.add('order', record, { jobId: record.orderId });
}

/**
 * Adds the orders as one job (a lone order as an order job). An order is accepted by one process
 * once, so a batch's first order names it: a re-sent add of the same batch is a no-op.
 */
export async function enqueueOrders(queue: OrderQueue, records: readonly OrderRecord[]): Promise<void> {
  const [first] = records;
  if (first === undefined) return;
  if (records.length === 1) return enqueueOrder(queue, first);
  await queue.add('batch', { orders: [...records] }, { jobId: `batch.${first.orderId}` });
}

/** True for a batch job's data (its orders still unchecked). */
export function isOrderBatch(data: unknown): data is { orders: unknown[] } {
  return Array.isArray((data as { orders?: unknown } | null)?.orders);
}
