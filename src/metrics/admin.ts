// Admin metrics: the sale changes made through the admin API (put, restock, reshard), counted when
// they succeed and timed under the shard locks whatever their result; and wrong admin tokens.

import { Counter, Histogram, type Registry } from 'prom-client';

export function adminMetrics(registry: Registry) {
  return {
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
    adminTokenFailures: new Counter({
      name: 'flashsale_admin_token_failures_total',
      help: 'Wrong admin tokens, wherever sent (admin routes, the admin view of an order), by whether their address was braked (429)',
      labelNames: ['braked'] as const,
      registers: [registry],
    }),
    reshards: new Counter({
      name: 'flashsale_reshards_total',
      help: 'Successful live reshards',
      registers: [registry],
    }),
  };
}
