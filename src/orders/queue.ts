// Producer side of the orders queues: where they live (one on a single Redis, one per master on a
// cluster), the job options, and the idempotent enqueue of one order (jobId = orderId) or of a batch.

import { type ConnectionOptions, type DefaultJobOptions, Queue } from 'bullmq';
import calculateSlot from 'cluster-key-slot';
import { Cluster } from 'ioredis';
import {
  createRedisClient,
  masterOf,
  masters,
  type RedisClient,
  type RedisTarget,
} from '../redis/connection.ts';
import { ORDER_QUEUE, type OrderRecord } from './order.ts';

/** Where the queues are: a Redis URL or a target (one Redis, or a cluster's seed nodes). */
export type QueueConnection = string | RedisTarget;

/** Prefix of the one queue on a single Redis (BullMQ's default: keys `bull:orders:*`). */
export const DEFAULT_QUEUE_PREFIX = 'bull';
/**
 * Set of every queue prefix an API process has sent orders to: the writer consumes each of them,
 * even one chosen on a slot map that has changed since.
 */
export const QUEUE_REGISTRY_KEY = 'flashsale:order-queues';

/**
 * The prefixes to spread the hand-off over. One BullMQ queue lives in one slot, so on a cluster there
 * is one queue per master: `{flashsale-orders-n}` for the smallest n whose slot that master serves
 * (tags that look different can still share a master, so the slot map decides). A failover keeps
 * the choice (the replica serves the same slots). On a single Redis: the one default queue.
 */
export function queuePrefixes(redis: RedisClient): string[] {
  if (!(redis instanceof Cluster)) return [DEFAULT_QUEUE_PREFIX];
  const wanted = new Set(masters(redis));
  const chosen: string[] = [];
  for (let n = 0; wanted.size > 0 && n < 100_000; n++) {
    const prefix = `{flashsale-orders-${n}}`;
    const node = masterOf(redis, prefix);
    if (wanted.delete(node)) chosen.push(prefix);
  }
  return chosen.sort((a, b) => calculateSlot(a) - calculateSlot(b));
}

/** Records prefixes in the registry the writer reads (see QUEUE_REGISTRY_KEY). */
export async function registerQueues(redis: RedisClient, prefixes: readonly string[]): Promise<void> {
  if (prefixes.length > 0) await redis.sadd(QUEUE_REGISTRY_KEY, ...prefixes);
}

/** Every prefix registered so far (at least the default one on a single Redis). */
export async function registeredQueues(redis: RedisClient): Promise<string[]> {
  return (await redis.smembers(QUEUE_REGISTRY_KEY)).sort();
}

/** Cluster clients made for BullMQ objects, disconnected when their object is closed. */
const ownedClients = new WeakMap<object, RedisClient>();

/**
 * BullMQ's connection for a target. A single Redis: options, from which BullMQ opens its own
 * connections. A cluster: a Cluster client (BullMQ shares it and duplicates it for blocking reads),
 * with no retry limit per command, as BullMQ requires; `own` ties it to the object to close it with.
 */
export function bullConnection(connection: QueueConnection): {
  connection: ConnectionOptions;
  own(owner: object): void;
} {
  const target = typeof connection === 'string' ? { url: connection } : connection;
  if ('url' in target) return { connection: { url: target.url }, own: () => {} };
  const client = createRedisClient(target, { maxRetriesPerRequest: null });
  return { connection: client as ConnectionOptions, own: (owner) => ownedClients.set(owner, client) };
}

/** Closes a queue or worker and the cluster client made for it, if any. */
export async function closeBull(object: { close(): Promise<void> }): Promise<void> {
  await object.close();
  ownedClients.get(object)?.disconnect();
}

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

/** The orders queue under `prefix` (close it with closeBull). */
export function createOrderQueue(connection: QueueConnection, prefix = DEFAULT_QUEUE_PREFIX): OrderQueue {
  const bull = bullConnection(connection);
  const queue = new Queue<OrderJobData>(ORDER_QUEUE, {
    connection: bull.connection,
    prefix,
    defaultJobOptions: ORDER_JOB_OPTIONS,
  });
  bull.own(queue);
  return queue;
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
