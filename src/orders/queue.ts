// Producer side of the orders queue: the job options every order is enqueued with, and the
// idempotent enqueue (jobId = orderId). The writer registers the matching backoff strategy.
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

export function createOrderQueue(connection: QueueConnection): Queue<OrderRecord> {
  return new Queue<OrderRecord>(ORDER_QUEUE, {
    connection: toRedisOptions(connection),
    defaultJobOptions: ORDER_JOB_OPTIONS,
  });
}

/** Adds the order; a job with the same id already queued (or recently completed) makes this a no-op. */
export async function enqueueOrder(queue: Queue<OrderRecord>, record: OrderRecord): Promise<void> {
  await queue.add('order', record, { jobId: record.orderId });
}
