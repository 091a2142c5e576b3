// Prometheus metrics of the process (GET /metrics). Product labels are deliberately absent: the
// number of products is unbounded, and one label per product would grow the registry without end.
import { Counter, collectDefaultMetrics, Histogram, Registry } from 'prom-client';

export function createMetrics() {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry });
  return {
    registry,
    orders: new Counter({
      name: 'flashsale_orders_total',
      help: 'Order requests by outcome (accepted, sold_out, busy, limit_exceeded, invalid, unknown_product, unavailable, error)',
      labelNames: ['outcome'] as const,
      registers: [registry],
    }),
    orderSeconds: new Histogram({
      name: 'flashsale_order_duration_seconds',
      help: 'Latency of POST /api/orders by outcome',
      labelNames: ['outcome'] as const,
      buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5],
      registers: [registry],
    }),
    shardAttempts: new Counter({
      name: 'flashsale_shard_attempts_total',
      help: 'Guarded decrements by outcome; fallback=true when it was not the first shard the order tried',
      labelNames: ['outcome', 'fallback'] as const,
      registers: [registry],
    }),
    soldOutFastPath: new Counter({
      name: 'flashsale_sold_out_fast_path_total',
      help: 'Orders answered sold out from the in-process flag, without touching Redis',
      registers: [registry],
    }),
    adminChanges: new Counter({
      name: 'flashsale_admin_changes_total',
      help: 'Admin changes by kind (create, replace, restock, reshard)',
      labelNames: ['kind'] as const,
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
      help: 'Time of one writer batch (INSERT + COMMIT)',
      buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1],
      registers: [registry],
    }),
  };
}

export type Metrics = ReturnType<typeof createMetrics>;
