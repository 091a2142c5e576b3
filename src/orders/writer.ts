// The writer: a BullMQ worker that inserts accepted orders (batch jobs of one API process, or single
// orders from the sweeper) into Postgres in micro-batches, then clears their reservations (outbox).
import { type Job, UnrecoverableError, Worker } from 'bullmq';
import type { Kysely } from 'kysely';
import { type Logger, pino } from 'pino';
import type { WriterSection } from '../config/sections.ts';
import { type Database, isConnectionError } from '../db/database.ts';
import { existingOrderIds, insertOrders } from '../db/orders-repo.ts';
import { UnavailableError } from '../errors.ts';
import { deleteReservations, presentReservations } from '../inventory/reservations.ts';
import { createRedisClient } from '../redis/connection.ts';
import { Batcher, type FlushOutcome } from './batcher.ts';
import { registerForExpiry } from './lifecycle.ts';
import { ORDER_QUEUE, type OrderRecord } from './order.ts';
import { parseOrderRecord } from './order-schema.ts';
import {
  bullConnection,
  closeBull,
  createOrderQueue,
  DEFAULT_QUEUE_PREFIX,
  isOrderBatch,
  ORDER_BACKOFF_TYPE,
  orderBackoffDelay,
  type QueueConnection,
} from './queue.ts';

export interface BatchStats {
  /** Jobs in the batch (duplicates of one order included). */
  size: number;
  /** Rows that were new; the rest already existed (replays). */
  inserted: number;
  /** Time from flush start to commit and reservation cleanup. */
  ms: number;
}

/**
 * Where the writer reads and writes, and its settings: config.writer (WRITER_* in
 * src/config/sections.ts, which holds their defaults and bounds). `lockDurationMs` is the BullMQ lock
 * of each held job, renewed while the job is held (also while its batch waits on Postgres): a killed
 * writer's jobs go back to the queue about lockDurationMs + stalledIntervalMs after the kill.
 */
export interface WriterOptions extends WriterSection {
  connection: QueueConnection;
  /** Prefixes of the queues to consume (more can be added with `consume`). Default: the one default queue. */
  prefixes?: readonly string[];
  db: Kysely<Database>;
  logger?: Logger;
  /** Called after every committed batch (metrics, tests). */
  onBatch?: (stats: BatchStats) => void;
}

export interface Writer {
  /** The worker of the first queue. */
  worker: Worker<unknown, void>;
  /** One worker per queue consumed. */
  workers(): Worker<unknown, void>[];
  /** Starts consuming queues under these prefixes too (ones already consumed are skipped). */
  consume(prefixes: readonly string[]): void;
  /** Stops taking jobs, flushes the open batch and waits until every held job is settled. */
  close(): Promise<void>;
}

/** SQLSTATE class 22 (data exception) / 23 (integrity violation): retrying the same row cannot help. */
function isDataError(err: unknown): boolean {
  const code = (err as { code?: unknown } | null)?.code;
  return typeof code === 'string' && /^2[23]/.test(code);
}

function isUnrecoverable(err: unknown): boolean {
  return err instanceof UnrecoverableError || (err as Error | null)?.name === 'UnrecoverableError';
}

/** Job ids a poison order may be re-sent under: its own order id when it is a sane one. */
const SANE_JOB_ID = /^[A-Za-z0-9._-]{1,200}$/;

function poisonJobId(data: unknown, fallback: string): string {
  const orderId = (data as { orderId?: unknown } | null)?.orderId;
  return typeof orderId === 'string' && SANE_JOB_ID.test(orderId) ? orderId : `poison.${fallback}`;
}

function uniqueByOrderId(records: OrderRecord[]): OrderRecord[] {
  const byId = new Map(records.map((r) => [r.orderId, r]));
  // One lock order for every batch, so two batches holding the same replayed orders cannot deadlock.
  return [...byId.values()].sort((a, b) => (a.orderId < b.orderId ? -1 : a.orderId > b.orderId ? 1 : 0));
}

export function startWriter(options: WriterOptions): Writer {
  const { db, onBatch, concurrency, batchSize, batchMaxWaitMs, lockDurationMs, stalledIntervalMs } = options;
  const logger = options.logger ?? pino({ level: 'silent' });
  const target = typeof options.connection === 'string' ? { url: options.connection } : options.connection;
  const prefixes = options.prefixes?.length ? options.prefixes : [DEFAULT_QUEUE_PREFIX];

  // Reservation cleanup is best effort, so this client fails fast instead of queueing forever.
  const redis = createRedisClient(target, { maxRetriesPerRequest: 1 });
  redis.on('error', (err) => logger.debug({ err }, 'writer redis connection error'));

  async function clearReservations(records: OrderRecord[]): Promise<void> {
    try {
      // A reservation is cleared only once its order is registered for expiry (when it has a payment
      // deadline): the API registers it on acceptance, but may have died first.
      await registerForExpiry(redis, records);
      const failed = await deleteReservations(
        redis,
        records.map((r) => ({ shardKey: r.shardKey, id: r.orderId })),
      );
      if (failed > 0) logger.warn({ failed }, 'could not clear some reservations; the sweeper will');
    } catch (err) {
      // The rows are committed, so the jobs succeed; a leftover reservation is replayed as a no-op.
      logger.warn({ err, count: records.length }, 'could not clear reservations; the sweeper will');
    }
  }

  /** After a data error, inserts row by row so only the offending order fails. */
  async function insertIndividually(unique: OrderRecord[]): Promise<Map<string, Error>> {
    const errors = new Map<string, Error>();
    for (const record of unique) {
      try {
        await insertOrders(db, [record]);
      } catch (err) {
        if (isConnectionError(err)) throw new UnavailableError('Postgres', err);
        if (!isDataError(err)) throw err;
        const message = err instanceof Error ? err.message : String(err);
        errors.set(
          record.orderId,
          new UnrecoverableError(`order ${record.orderId} rejected by Postgres: ${message}`),
        );
      }
    }
    return errors;
  }

  /**
   * Orders whose reservation is gone from Redis and that have no row yet. A reservation leaves its hash
   * only after its row is committed, or when the Redis data holding it is lost: a failover to a replica
   * that had not received it yet (replication is asynchronous unless REDIS_WAIT_REPLICAS), or a Redis
   * without persistence restarted. Its unit is then back in the shard's stock, so a row now could sell
   * that unit twice; such an order fails (failed set, with the reason) instead: an acknowledgement
   * lost, never an oversell. Redis unreachable: the batch retries.
   */
  async function lostOrders(unique: OrderRecord[]): Promise<Map<string, Error>> {
    let present: Set<string>;
    try {
      present = await presentReservations(
        redis,
        unique.map((r) => ({ shardKey: r.shardKey, id: r.orderId })),
      );
    } catch (err) {
      throw new UnavailableError('Redis', err);
    }
    const missing = unique.filter((r) => !present.has(r.orderId)).map((r) => r.orderId);
    if (missing.length === 0) return new Map();
    let persisted: Set<string>;
    try {
      persisted = await existingOrderIds(db, missing);
    } catch (err) {
      throw isConnectionError(err) ? new UnavailableError('Postgres', err) : err;
    }
    const lost = new Map<string, Error>();
    for (const orderId of missing) {
      if (persisted.has(orderId)) continue;
      logger.error({ orderId }, 'order whose reservation is gone from Redis (failover?) not persisted');
      lost.set(
        orderId,
        new UnrecoverableError(
          `order ${orderId}: its reservation is gone from Redis (lost in a failover?), its unit is back on sale`,
        ),
      );
    }
    return lost;
  }

  async function flush(records: OrderRecord[]): Promise<FlushOutcome> {
    const started = performance.now();
    const candidates = uniqueByOrderId(records);
    const lost = await lostOrders(candidates);
    const unique = candidates.filter((r) => !lost.has(r.orderId));
    let inserted: number;
    try {
      inserted = await db.transaction().execute((trx) => insertOrders(trx, unique));
    } catch (err) {
      if (!isDataError(err)) {
        logger.warn({ err, size: records.length }, 'order batch insert failed; its jobs will retry');
        throw isConnectionError(err) ? new UnavailableError('Postgres', err) : err;
      }
      logger.error({ err, size: records.length }, 'order batch rejected; inserting its rows one by one');
      const errors = await insertIndividually(unique);
      await clearReservations(unique.filter((r) => !errors.has(r.orderId)));
      return records.map((r) => lost.get(r.orderId) ?? errors.get(r.orderId));
    }
    await clearReservations(unique);
    onBatch?.({ size: records.length, inserted, ms: performance.now() - started });
    return lost.size > 0 ? records.map((r) => lost.get(r.orderId)) : undefined;
  }

  const batcher = new Batcher<OrderRecord>({ maxSize: batchSize, maxWaitMs: batchMaxWaitMs, flush });
  // Poison orders of a batch job are sent again as order jobs of their own, which then fail alone.
  const poisonQueue = createOrderQueue(target, prefixes[0]);
  poisonQueue.on('error', (err) => logger.debug({ err }, 'writer queue connection error'));

  /** Persists one order; unrecoverable (invalid data, a row Postgres refuses) goes to the failed set. */
  async function persist(data: unknown): Promise<void> {
    const parsed = parseOrderRecord(data);
    if (!parsed.ok) throw new UnrecoverableError(`invalid order data: ${parsed.reason}`);
    await batcher.add(parsed.record);
  }

  /**
   * A batch job persists every order it can. An unrecoverable order is re-sent as an order job of
   * its own (job id = its order id, so a replay or the sweeper adds nothing more), which fails
   * alone and shows in the failed set under its product; the batch succeeds. Any other failure
   * (Postgres down) retries the whole batch: its rows are idempotent on their order ids.
   */
  async function persistBatch(job: Job<unknown, void>, orders: unknown[]): Promise<void> {
    const results = await Promise.allSettled(orders.map(persist));
    const poison: { data: unknown; jobId: string }[] = [];
    for (const [i, r] of results.entries()) {
      if (r.status === 'fulfilled') continue;
      if (!isUnrecoverable(r.reason)) throw r.reason;
      poison.push({ data: orders[i], jobId: poisonJobId(orders[i], `${job.id}.${i}`) });
    }
    for (const p of poison) {
      logger.error({ jobId: job.id, orderJobId: p.jobId }, 'poison order in a batch; sent on as its own job');
      await poisonQueue.add('order', p.data as OrderRecord, { jobId: p.jobId });
    }
  }

  const processor = async (job: Job<unknown, void>): Promise<void> => {
    // Unrecoverable: straight to the failed set with the reason, never retried, never blocking.
    if (isOrderBatch(job.data)) await persistBatch(job, job.data.orders);
    else await persist(job.data);
  };

  const workers = new Map<string, Worker<unknown, void>>();
  let closing: Promise<void> | undefined;
  const startWorker = (prefix: string): Worker<unknown, void> => {
    const bull = bullConnection(target);
    const worker = new Worker<unknown, void>(ORDER_QUEUE, processor, {
      connection: bull.connection,
      prefix,
      concurrency,
      // Lock renewal is a timer of BullMQ's, independent of the processor: a job whose batch waits on
      // a slow or hung Postgres keeps its lock, so only a dead (or frozen) writer's jobs are retaken.
      lockDuration: lockDurationMs,
      stalledInterval: stalledIntervalMs,
      // A job whose writer died mid-batch is put back; past maxStalledCount BullMQ fails it instead
      // (default 1: on the second crash) and, with jobId = orderId, the order could then never be
      // enqueued again. Being retaken is harmless: the insert is idempotent on the order id.
      maxStalledCount: 1_000_000,
      settings: {
        backoffStrategy: (attemptsMade: number, type?: string) => {
          if (type !== ORDER_BACKOFF_TYPE)
            logger.warn({ type }, 'unknown backoff type; using the order backoff');
          return orderBackoffDelay(attemptsMade);
        },
      },
    });
    bull.own(worker);
    worker.on('error', (err) => logger.error({ err }, 'order worker error'));
    worker.on('failed', (job, err) => {
      if (isUnrecoverable(err)) {
        logger.error({ jobId: job?.id, reason: err.message }, 'order job failed permanently');
      }
    });
    workers.set(prefix, worker);
    return worker;
  };
  const consume = (more: readonly string[]) => {
    for (const prefix of more) if (!workers.has(prefix) && !closing) startWorker(prefix);
  };
  const [first, ...rest] = prefixes;
  const worker = startWorker(first as string);
  consume(rest);

  const close = (): Promise<void> => {
    closing ??= (async () => {
      const workersClosed = Promise.all([...workers.values()].map(closeBull));
      // Jobs already held must not sit out the batch timer: their batch goes now.
      batcher.flushNow();
      await workersClosed;
      await batcher.drain();
      await closeBull(poisonQueue);
      redis.disconnect();
    })();
    return closing;
  };

  return { worker, workers: () => [...workers.values()], consume, close };
}
