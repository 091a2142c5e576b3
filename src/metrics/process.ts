// Metrics of the Node process itself (event-loop lag, heap, GC, handles) and of the scrape: the areas'
// reads of outside sources at scrape time, each bounded in time and counted by source when it fails.

import { Counter, collectDefaultMetrics, type Registry } from 'prom-client';

/** The outside sources gauges read on scrape (flashsale_metrics_collect_errors_total's `source`). */
export type ScrapeSource = 'queue' | 'reservations';

/**
 * One scrape-time read of a source: its value, or undefined when it failed or timed out (counted). The
 * gauge then shows unknown (absent or NaN), never 0 or a stale value.
 */
export type ScrapeRead = <T>(
  source: ScrapeSource,
  what: string,
  read: () => Promise<T>,
) => Promise<T | undefined>;

/** A scrape must not hang on an unreachable Redis: each source gets this long. */
const COLLECT_TIMEOUT_MS = 2000;

function withTimeout<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what} did not answer within ${ms} ms`)), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

/** Registers the process metrics; returns the bounded, counted read the other areas' gauges use. */
export function processMetrics(registry: Registry): { read: ScrapeRead } {
  // Includes nodejs_eventloop_lag_seconds (and its percentiles), heap, GC and handle counts.
  collectDefaultMetrics({ register: registry });
  const collectErrors = new Counter({
    name: 'flashsale_metrics_collect_errors_total',
    help: 'Scrape-time reads that failed or timed out (queue gauges absent, reservation gauges NaN in that scrape)',
    labelNames: ['source'] as const,
    registers: [registry],
  });
  return {
    async read(source, what, read) {
      try {
        return await withTimeout(read(), COLLECT_TIMEOUT_MS, what);
      } catch {
        collectErrors.inc({ source });
        return undefined;
      }
    },
  };
}
