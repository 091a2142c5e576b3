// The writer: BullMQ workers that insert accepted orders (batch jobs of one API process, or single
// orders from the sweeper) into Postgres in micro-batches, then clear their reservations (outbox).
import { type Job, UnrecoverableError, Worker } from 'bullmq';
import type { Kysely } from 'kysely';
import { type Logger, pino } from 'pino';
import type { WriterSection } from '../config/sections.ts';
import type { Database } from '../db/database.ts';
import { createRedisClient, type RedisClient, type RedisTarget } from '../redis/connection.ts';
import { Batcher } from './batcher.ts';
import { ORDER_QUEUE, type OrderRecord } from './order.ts';
import { parseOrderRecord } from './order-schema.ts';
import {
  bullConnection,
  closeBull,
  createOrderQueue,
  DEFAULT_QUEUE_PREFIX,
  isOrderBatch,
  ORDER_BACKOFF_TYPE,
  type OrderQueue,
  orderBackoffDelay,
  type QueueConnection,
} from './queue.ts';
import { type BatchStats, RowWriter } from './row-writer.ts';

export type { BatchStats } from './row-writer.ts';

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

type OrderWorker = Worker<unknown, void>;

function isUnrecoverable(err: unknown): boolean {
  return err instanceof UnrecoverableError || (err as Error | null)?.name === 'UnrecoverableError';
}

/** Job ids a poison order may be re-sent under: its own order id when it is a sane one. */
const SANE_JOB_ID = /^[A-Za-z0-9._-]{1,200}$/;

function poisonJobId(data: unknown, fallback: string): string {
  const orderId = (data as { orderId?: unknown } | null)?.orderId;
  return typeof orderId === 'string' && SANE_JOB_ID.test(orderId) ? orderId : `poison.${fallback}`;
}

/**
 * Consumes the order queues from construction on: one BullMQ worker per queue, their jobs' orders
 * gathered into batches of `batchSize` rows (waiting at most `batchMaxWaitMs`). A job that cannot
 * succeed (invalid data, a row Postgres refuses) goes to the failed set; any other failure retries.
 *
 * @example
 * const writer = new OrderWriter({ ...config.writer, connection: target, db });
 * await writer.close(); // finishes every held job
 */
export class OrderWriter {
  /** The worker of the first queue. */
  readonly worker: OrderWorker;
  private readonly byPrefix = new Map<string, OrderWorker>();
  private readonly logger: Logger;
  private readonly target: RedisTarget;
  // Reservation cleanup is best effort, so this client fails fast instead of queueing forever.
  private readonly redis: RedisClient;
  private readonly batcher: Batcher<OrderRecord>;
  // Poison orders of a batch job are sent again as order jobs of their own, which then fail alone.
  private readonly poisonQueue: OrderQueue;
  private closing: Promise<void> | undefined;

  constructor(private readonly options: WriterOptions) {
    this.logger = options.logger ?? pino({ level: 'silent' });
    const { connection } = options;
    this.target = typeof connection === 'string' ? { url: connection } : connection;
    this.redis = createRedisClient(this.target, { maxRetriesPerRequest: 1 });
    this.redis.on('error', (err) => this.logger.debug({ err }, 'writer redis connection error'));
    const rows = new RowWriter(options.db, this.redis, this.logger, options.onBatch);
    this.batcher = new Batcher<OrderRecord>({
      maxSize: options.batchSize,
      maxWaitMs: options.batchMaxWaitMs,
      flush: (records) => rows.flush(records),
    });
    const [first = DEFAULT_QUEUE_PREFIX, ...rest] = options.prefixes ?? [];
    this.poisonQueue = createOrderQueue(this.target, first);
    this.poisonQueue.on('error', (err) => this.logger.debug({ err }, 'writer queue connection error'));
    this.worker = this.startWorker(first);
    this.consume(rest);
  }

  /** One worker per queue consumed. */
  workers(): OrderWorker[] {
    return [...this.byPrefix.values()];
  }

  /** Starts consuming queues under these prefixes too (ones already consumed are skipped). */
  consume(prefixes: readonly string[]): void {
    for (const prefix of prefixes) if (!this.byPrefix.has(prefix) && !this.closing) this.startWorker(prefix);
  }

  /** Stops taking jobs, flushes the open batch and waits until every held job is settled. */
  close(): Promise<void> {
    this.closing ??= (async () => {
      const workersClosed = Promise.all(this.workers().map(closeBull));
      // Jobs already held must not sit out the batch timer: their batch goes now.
      this.batcher.flushNow();
      await workersClosed;
      await this.batcher.drain();
      await closeBull(this.poisonQueue);
      this.redis.disconnect();
    })();
    return this.closing;
  }

  private startWorker(prefix: string): OrderWorker {
    const bull = bullConnection(this.target);
    const worker = new Worker<unknown, void>(ORDER_QUEUE, (job) => this.process(job), {
      connection: bull.connection,
      prefix,
      concurrency: this.options.concurrency,
      // Lock renewal is a timer of BullMQ's, independent of the processor: a job whose batch waits on
      // a slow or hung Postgres keeps its lock, so only a dead (or frozen) writer's jobs are retaken.
      lockDuration: this.options.lockDurationMs,
      stalledInterval: this.options.stalledIntervalMs,
      // A job whose writer died mid-batch is put back; past maxStalledCount BullMQ fails it instead
      // (default 1: on the second crash) and, with jobId = orderId, the order could then never be
      // enqueued again. Being retaken is harmless: the insert is idempotent on the order id.
      maxStalledCount: 1_000_000,
      settings: {
        backoffStrategy: (attemptsMade: number, type?: string) => this.backoff(attemptsMade, type),
      },
    });
    bull.own(worker);
    worker.on('error', (err) => this.logger.error({ err }, 'order worker error'));
    worker.on('failed', (job, err) => {
      if (isUnrecoverable(err))
        this.logger.error({ jobId: job?.id, reason: err.message }, 'order job failed permanently');
    });
    this.byPrefix.set(prefix, worker);
    return worker;
  }

  private backoff(attemptsMade: number, type?: string): number {
    if (type !== ORDER_BACKOFF_TYPE)
      this.logger.warn({ type }, 'unknown backoff type; using the order backoff');
    return orderBackoffDelay(attemptsMade);
  }

  /** Unrecoverable: straight to the failed set with the reason, never retried, never blocking. */
  private async process(job: Job<unknown, void>): Promise<void> {
    if (isOrderBatch(job.data)) await this.persistBatch(job, job.data.orders);
    else await this.persist(job.data);
  }

  /** Persists one order; unrecoverable (invalid data, a row Postgres refuses) goes to the failed set. */
  private async persist(data: unknown): Promise<void> {
    const parsed = parseOrderRecord(data);
    if (!parsed.ok) throw new UnrecoverableError(`invalid order data: ${parsed.reason}`);
    await this.batcher.add(parsed.record);
  }

  /**
   * A batch job persists every order it can. An unrecoverable order is re-sent as an order job of
   * its own (job id = its order id, so a replay or the sweeper adds nothing more), which fails
   * alone and shows in the failed set under its product; the batch succeeds. Any other failure
   * (Postgres down) retries the whole batch: its rows are idempotent on their order ids.
   */
  private async persistBatch(job: Job<unknown, void>, orders: unknown[]): Promise<void> {
    const results = await Promise.allSettled(orders.map((order) => this.persist(order)));
    const poison: { data: unknown; jobId: string }[] = [];
    for (const [i, r] of results.entries()) {
      if (r.status === 'fulfilled') continue;
      if (!isUnrecoverable(r.reason)) throw r.reason;
      poison.push({ data: orders[i], jobId: poisonJobId(orders[i], `${job.id}.${i}`) });
    }
    for (const p of poison) {
      this.logger.error(
        { jobId: job.id, orderJobId: p.jobId },
        'poison order in a batch; sent on as its own job',
      );
      await this.poisonQueue.add('order', p.data as OrderRecord, { jobId: p.jobId });
    }
  }
}
