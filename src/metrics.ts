// Prometheus metrics of the process (GET /metrics), composed from one file per area in src/metrics/,
// each registering its own on the shared registry. No product label (products are unbounded).

import { Registry } from 'prom-client';
import { adminMetrics } from './metrics/admin.ts';
import { admissionMetrics } from './metrics/admission.ts';
import { inventoryMetrics } from './metrics/inventory.ts';
import { lifecycleMetrics } from './metrics/lifecycle.ts';
import { lockMetrics } from './metrics/locks.ts';
import { orderMetrics } from './metrics/orders.ts';
import { processMetrics } from './metrics/process.ts';
import { replicaMetrics } from './metrics/replicas.ts';
import { waitingRoomMetrics } from './metrics/waiting-room.ts';
import { writerMetrics } from './metrics/writer.ts';

export type { AdmissionState } from './metrics/admission.ts';
export { allQueues, type JobCounter, oldestJobAge, QUEUE_STATES } from './metrics/job-counter.ts';
export { type OrderOutcome, orderOutcome } from './metrics/orders.ts';
export type { WaitingRoomState } from './metrics/waiting-room.ts';

/**
 * The registry and every area's metrics and hooks as one flat object (`metrics.orders.inc(...)`,
 * `metrics.observeLock(e)`). An area is a function of the registry (and of the scrape-time read, for
 * gauges of outside sources) returning its metrics; adding one is a file and a line here. Per-product
 * numbers are in GET /admin/products/:id, not here.
 */
export function createMetrics() {
  const registry = new Registry();
  const { read } = processMetrics(registry);
  return {
    registry,
    ...writerMetrics(registry, read),
    ...inventoryMetrics(registry, read),
    ...lockMetrics(registry),
    ...orderMetrics(registry),
    ...admissionMetrics(registry),
    ...lifecycleMetrics(registry),
    ...adminMetrics(registry),
    ...waitingRoomMetrics(registry),
    ...replicaMetrics(registry),
  };
}

export type Metrics = ReturnType<typeof createMetrics>;
