// Writer metrics: the INSERT batches of the process's writer, and the orders queue it drains (job
// counts and lag, read on scrape from the queue the runtime hands over with watchQueue).

import { Gauge, Histogram, type Registry } from 'prom-client';
import { type JobCounter, oldestJobAge, QUEUE_STATES } from './job-counter.ts';
import type { ScrapeRead } from './process.ts';

export function writerMetrics(registry: Registry, read: ScrapeRead) {
  let queue: JobCounter | undefined;
  return {
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
    queueJobs: new Gauge({
      name: 'flashsale_order_queue_jobs',
      help: 'Jobs in the orders queue by state (waiting, active, delayed = retry backoff, failed), read on scrape',
      labelNames: ['state'] as const,
      registers: [registry],
      async collect() {
        const q = queue;
        if (!q) return;
        const counts = await read('queue', 'queue', () => q.getJobCounts(...QUEUE_STATES));
        if (!counts) this.reset();
        else for (const state of QUEUE_STATES) this.set({ state }, counts[state] ?? 0);
      },
    }),
    queueLag: new Gauge({
      name: 'flashsale_order_queue_lag_seconds',
      help: 'Writer lag: age of the oldest order job not yet written (head of the waiting list and of the retry-delayed set; 0 when empty), read on scrape',
      registers: [registry],
      async collect() {
        const q = queue;
        if (!q) return;
        this.set((await read('queue', 'queue lag', () => oldestJobAge(q))) ?? Number.NaN);
      },
    }),
    /** The queue whose job counts flashsale_order_queue_jobs reports. */
    watchQueue(q: JobCounter): void {
      queue = q;
    },
  };
}
