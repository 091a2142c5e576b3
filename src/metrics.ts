// Prometheus metrics of the process (GET /metrics). No product label (products are unbounded; per-product
// numbers are in GET /admin/products/:id); queue depth and outstanding reservations are read on scrape.

import { Counter, collectDefaultMetrics, Gauge, Histogram, Registry } from 'prom-client';
import { lockKind, RESERVATION_HASHES } from './inventory/keys.ts';
import { countReservations, type ReservationCount } from './inventory/reservations.ts';
import type { LockEvent } from './lock/index.ts';
import type { RedisClient } from './redis/connection.ts';

/** What the admission gauges show of one process's order admission (src/http/admission.ts). */
export interface AdmissionState {
  limit: number;
  inflight: number;
  queued: number;
}

/** Outcomes of POST /api/orders as counted by flashsale_orders_total (a closed set). */
const ORDER_OUTCOMES = [
  'accepted',
  'replayed',
  'sold_out',
  'busy',
  'queued',
  'rate_limited',
  'limit_exceeded',
  'not_started',
  'sale_ended',
  'invalid',
  'unknown_product',
  'conflict',
  'unavailable',
  'error',
] as const;
export type OrderOutcome = (typeof ORDER_OUTCOMES)[number];

const OUTCOME_BY_CODE: Record<string, OrderOutcome> = {
  sold_out: 'sold_out',
  busy: 'busy',
  rate_limited: 'rate_limited',
  limit_exceeded: 'limit_exceeded',
  not_started: 'not_started',
  sale_ended: 'sale_ended',
  invalid_request: 'invalid',
  invalid_ticket: 'invalid',
  queued: 'queued',
  payload_too_large: 'invalid',
  unsupported_media_type: 'invalid',
  unknown_product: 'unknown_product',
  idempotency_key_reused: 'conflict',
  request_in_progress: 'conflict',
  unavailable: 'unavailable',
};

/** The outcome label of an order answer: its error code mapped onto ORDER_OUTCOMES, never free text. */
export function orderOutcome(status: number, code: unknown): OrderOutcome {
  if (status >= 200 && status < 300) return 'accepted';
  return (typeof code === 'string' && OUTCOME_BY_CODE[code]) || 'error';
}

/** Job states of the orders queue reported by flashsale_order_queue_jobs. */
export const QUEUE_STATES = ['waiting', 'active', 'delayed', 'failed'] as const;

/** Anything that can count its jobs by state and list them oldest first (a BullMQ Queue). */
export interface JobCounter {
  getJobCounts(...states: string[]): Promise<Record<string, number>>;
  getJobs(
    types: ('waiting' | 'delayed')[],
    start: number,
    end: number,
    asc: boolean,
  ): Promise<{ timestamp: number }[]>;
}

/** The job counts and oldest jobs of several queues (one per master on a cluster) as one queue. */
export function allQueues(queues: readonly JobCounter[]): JobCounter {
  return {
    async getJobCounts(...states) {
      const counts = await Promise.all(queues.map((q) => q.getJobCounts(...states)));
      const total: Record<string, number> = {};
      for (const c of counts)
        for (const [state, n] of Object.entries(c)) total[state] = (total[state] ?? 0) + n;
      return total;
    },
    async getJobs(types, start, end, asc) {
      const lists = await Promise.all(queues.map((q) => q.getJobs(types, start, end, asc)));
      return lists.flat().sort((a, b) => (asc ? a.timestamp - b.timestamp : b.timestamp - a.timestamp));
    },
  };
}

/**
 * Seconds since the oldest order job not yet written was queued: the heads of the waiting list and
 * of the retry-delayed set (two one-job reads), 0 when both are empty. This is the writer's lag.
 */
export async function oldestJobAge(queue: JobCounter, now = Date.now()): Promise<number> {
  const heads = await Promise.all([
    queue.getJobs(['waiting'], 0, 0, true),
    queue.getJobs(['delayed'], 0, 0, true),
  ]);
  const oldest = Math.min(...heads.flat().map((job) => job?.timestamp ?? Number.POSITIVE_INFINITY));
  return Number.isFinite(oldest) ? Math.max(0, (now - oldest) / 1000) : 0;
}

/** A scrape must not hang on an unreachable RedisClient: each source gets this long. */
const COLLECT_TIMEOUT_MS = 2000;
function withTimeout<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what} did not answer within ${ms} ms`)), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

const LOCK_BUCKETS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];

export function createMetrics() {
  const registry = new Registry();
  // Includes nodejs_eventloop_lag_seconds (and its percentiles), heap, GC and handle counts.
  collectDefaultMetrics({ register: registry });

  // Sources read at scrape time; set by the runtime once the queue and Redis exist.
  let queue: JobCounter | undefined;
  let redis: RedisClient | undefined;

  const collectErrors = new Counter({
    name: 'flashsale_metrics_collect_errors_total',
    help: 'Scrape-time reads that failed or timed out (queue gauges absent, reservation gauges NaN in that scrape)',
    labelNames: ['source'] as const,
    registers: [registry],
  });

  const queueJobs = new Gauge({
    name: 'flashsale_order_queue_jobs',
    help: 'Jobs in the orders queue by state (waiting, active, delayed = retry backoff, failed), read on scrape',
    labelNames: ['state'] as const,
    registers: [registry],
    async collect() {
      if (!queue) return;
      try {
        const counts = await withTimeout(queue.getJobCounts(...QUEUE_STATES), COLLECT_TIMEOUT_MS, 'queue');
        for (const state of QUEUE_STATES) this.set({ state }, counts[state] ?? 0);
      } catch {
        this.reset();
        collectErrors.inc({ source: 'queue' });
      }
    },
  });

  const queueLag = new Gauge({
    name: 'flashsale_order_queue_lag_seconds',
    help: 'Writer lag: age of the oldest order job not yet written (head of the waiting list and of the retry-delayed set; 0 when empty), read on scrape',
    registers: [registry],
    async collect() {
      if (!queue) return;
      try {
        this.set(await withTimeout(oldestJobAge(queue), COLLECT_TIMEOUT_MS, 'queue lag'));
      } catch {
        this.set(Number.NaN);
        collectErrors.inc({ source: 'queue' });
      }
    },
  });

  // One scan per scrape, shared by the two gauges below (the registry collects them concurrently);
  // a failed or timed-out scan shows as NaN (unknown), not as 0 or a stale value.
  let scanning: Promise<ReservationCount | null> | undefined;
  const scanReservations = (): Promise<ReservationCount | null> => {
    const r = redis;
    if (!r) return Promise.resolve(null);
    scanning ??= withTimeout(countReservations(r), COLLECT_TIMEOUT_MS, 'reservation scan')
      .catch(() => {
        collectErrors.inc({ source: 'reservations' });
        return null;
      })
      .finally(() => {
        scanning = undefined;
      });
    return scanning;
  };
  const reservations = new Gauge({
    name: 'flashsale_reservations_outstanding',
    help: `Accepted orders not yet persisted: entries of every ${RESERVATION_HASHES} hash (bounded SCAN on scrape)`,
    registers: [registry],
    async collect() {
      const r = await scanReservations();
      this.set(r ? r.entries : Number.NaN);
    },
  });
  new Gauge({
    name: 'flashsale_reservations_scan_complete',
    help: '1 when the reservation scan covered the whole keyspace, 0 when it stopped at its bounds (outstanding is then a lower bound)',
    registers: [registry],
    async collect() {
      const r = await scanReservations();
      this.set(r ? (r.complete ? 1 : 0) : Number.NaN);
    },
  });

  const lockWait = new Histogram({
    name: 'flashsale_lock_wait_seconds',
    help: 'Time to obtain a lock (the acquiring round trip included), by lock kind and result',
    labelNames: ['lock', 'result'] as const,
    buckets: LOCK_BUCKETS,
    registers: [registry],
  });
  const lockHold = new Histogram({
    name: 'flashsale_lock_hold_seconds',
    help: 'Time a lock was held, as the client sees it: from acquisition (or the send of a pipelined acquire) to the release reply',
    labelNames: ['lock'] as const,
    buckets: LOCK_BUCKETS,
    registers: [registry],
  });
  const lockHandoffs = new Counter({
    name: 'flashsale_lock_handoffs_total',
    help: 'Locks received by hand-off from the previous holder (a queued waiter woken directly)',
    labelNames: ['lock'] as const,
    registers: [registry],
  });

  const orders = new Counter({
    name: 'flashsale_orders_total',
    help: `Order requests by outcome (${ORDER_OUTCOMES.join(', ')}); replayed = answered from an Idempotency-Key`,
    labelNames: ['outcome'] as const,
    registers: [registry],
  });
  for (const outcome of ORDER_OUTCOMES) orders.inc({ outcome }, 0);

  let admission: (() => AdmissionState) | undefined;
  for (const [field, help] of [
    ['limit', 'Admission control: the adaptive limit of orders in flight in this process'],
    ['inflight', 'Admission control: orders admitted and not yet answered'],
    ['queued', 'Admission control: orders waiting for a slot'],
  ] as const) {
    new Gauge({
      name: `flashsale_admission_${field}`,
      help,
      registers: [registry],
      collect() {
        if (admission) this.set(admission()[field]);
      },
    });
  }

  const metrics = {
    registry,
    admissionShed: new Counter({
      name: 'flashsale_admission_shed_total',
      help: 'Orders refused 429 busy by admission control, by reason (queue_full, queue_timeout, loop_lag)',
      labelNames: ['reason'] as const,
      registers: [registry],
    }),
    rateLimited: new Counter({
      name: 'flashsale_rate_limited_total',
      help: 'Orders refused 429 rate_limited, by the limit that refused them (user, address)',
      labelNames: ['by'] as const,
      registers: [registry],
    }),
    /** The admission control whose state the flashsale_admission_* gauges report. */
    watchAdmission(state: () => AdmissionState): void {
      admission = state;
    },
    orders,
    orderSeconds: new Histogram({
      name: 'flashsale_order_duration_seconds',
      help: 'Latency of POST /api/orders by outcome',
      labelNames: ['outcome'] as const,
      buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5],
      registers: [registry],
    }),
    shardAttempts: new Counter({
      name: 'flashsale_shard_attempts_total',
      help: 'Guarded decrements by outcome (reserved, insufficient, retired, fenced); fallback="false" is the round-robin pick, "true" a fallback to another shard',
      labelNames: ['outcome', 'fallback'] as const,
      registers: [registry],
    }),
    fencingRefusals: new Counter({
      name: 'flashsale_fencing_refusals_total',
      help: 'Decrements the shard refused because the lock hold was no longer current (lease lapsed or a newer token seen)',
      registers: [registry],
    }),
    soldOutFastPath: new Counter({
      name: 'flashsale_sold_out_fast_path_total',
      help: 'Orders answered sold out from the in-process flag, without touching Redis',
      registers: [registry],
    }),
    orderFates: new Counter({
      name: 'flashsale_order_fates_total',
      help: 'Orders given their fate by this process: paid, expired (unpaid past the deadline) or cancelled by the buyer',
      labelNames: ['fate'] as const,
      registers: [registry],
    }),
    unitsReturned: new Counter({
      name: 'flashsale_units_returned_total',
      help: 'Units of expired or cancelled orders this process put back on sale (through a new shard generation)',
      registers: [registry],
    }),
    adminChanges: new Counter({
      name: 'flashsale_admin_changes_total',
      help: 'Successful admin changes by kind (put, restock, reshard)',
      labelNames: ['kind'] as const,
      registers: [registry],
    }),
    adminChangeSeconds: new Histogram({
      name: 'flashsale_admin_change_duration_seconds',
      help: 'Time of an admin change under the shard locks (put, restock, reshard), successful or not',
      labelNames: ['kind'] as const,
      buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
      registers: [registry],
    }),
    reshards: new Counter({
      name: 'flashsale_reshards_total',
      help: 'Successful live reshards',
      registers: [registry],
    }),
    writerBatchSize: new Histogram({
      name: 'flashsale_writer_batch_size',
      help: 'Orders per writer INSERT batch',
      buckets: [1, 2, 4, 8, 16, 32, 64, 128, 256, 512],
      registers: [registry],
    }),
    writerBatchSeconds: new Histogram({
      name: 'flashsale_writer_batch_duration_seconds',
      help: 'Time of one writer batch (INSERT + COMMIT + reservation cleanup)',
      buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1],
      registers: [registry],
    }),
    queueJobs,
    queueLag,
    reservations,
    reconcileDifferences: new Gauge({
      name: 'flashsale_reconcile_differences',
      help: "Products whose reconcile found differences on two reads in a row, at the worker's last periodic check (RECONCILE_INTERVAL_MS)",
      registers: [registry],
    }),
    reconcileChecked: new Gauge({
      name: 'flashsale_reconcile_products_checked',
      help: "Products the worker's last periodic reconcile checked",
      registers: [registry],
    }),
    lockWait,
    lockHold,
    lockHandoffs,

    /** The queue whose job counts flashsale_order_queue_jobs reports. */
    watchQueue(q: JobCounter): void {
      queue = q;
    },
    /** The RedisClient whose reservation hashes flashsale_reservations_outstanding counts. */
    watchReservations(r: RedisClient): void {
      redis = r;
    },
    /** The lock clients' onEvent hook (LockClient; EtcdLock or ZooKeeperLock with LOCK_BACKEND). */
    observeLock(e: LockEvent): void {
      const lock = lockKind(e.name);
      switch (e.type) {
        case 'acquired':
          lockWait.observe({ lock, result: 'acquired' }, e.waitMs / 1000);
          if (e.handoff) lockHandoffs.inc({ lock });
          break;
        case 'timeout':
          lockWait.observe({ lock, result: 'timeout' }, e.waitMs / 1000);
          break;
        case 'released':
          lockHold.observe({ lock }, e.heldMs / 1000);
          break;
      }
    },
    /** StockReserver's onShardAttempt hook. */
    observeShardAttempt(outcome: string, fallback: boolean): void {
      metrics.shardAttempts.inc({ outcome, fallback: String(fallback) });
      if (outcome === 'fenced') metrics.fencingRefusals.inc();
    },
  };
  return metrics;
}

export type Metrics = ReturnType<typeof createMetrics>;
