// Phase 2c of `npm run bench`: does watching the live dashboard slow the order path? A poller does
// what an open dashboard page does — GET /admin/products/:id/live once a second, with `since` —
// while the real path runs; bench/orders.ts compares slices with and without it (ABBA order).
import { setTimeout as sleep } from 'node:timers/promises';
import { call } from '../../harness/service.ts';

export interface PollStats {
  polls: number;
  /** Answers other than 200. */
  failed: number;
  /** Slowest poll, ms. */
  maxMs: number;
}

/** Polls like the dashboard page until `until` (performance.now() time). */
export async function pollDashboard(o: {
  url: string;
  productId: string;
  headers: Record<string, string>;
  until: number;
  everyMs: number;
}): Promise<PollStats> {
  const stats: PollStats = { polls: 0, failed: 0, maxMs: 0 };
  let since = 0;
  for (let next = performance.now(); next < o.until; next += o.everyMs) {
    const wait = next - performance.now();
    if (wait > 0) await sleep(wait);
    const start = performance.now();
    const r = await call(
      o.url,
      'GET',
      `/admin/products/${o.productId}/live?since=${since}`,
      undefined,
      o.headers,
    );
    stats.maxMs = Math.max(stats.maxMs, performance.now() - start);
    stats.polls += 1;
    if (r.status !== 200) stats.failed += 1;
    else since = Math.floor(Math.min(...[r.body.rates, r.body.saleHistory].map(lastT)));
  }
  return stats;
}

function lastT(points: unknown): number {
  return Array.isArray(points) ? Number(points.at(-1)?.t ?? 0) : 0;
}
