// Failed order jobs of one product, for the admin status: poison jobs (invalid data) and rows
// Postgres refused land in BullMQ's failed set with their reason; this makes them visible per product.
import type { Job, Queue } from 'bullmq';

/** Failed jobs read per status request; a bigger failed set is only partly scanned. */
const FAILED_SCAN_LIMIT = 1000;
/** Failed jobs listed in `recent` (newest first). */
const FAILED_RECENT_LIMIT = 10;

export interface FailedJobView {
  orderId: string;
  reason: string;
  /** ISO time the job failed; null if BullMQ did not record it. */
  failedAt: string | null;
}

export interface FailedJobs {
  /** Failed jobs of this product among the ones scanned. */
  count: number;
  recent: FailedJobView[];
  /** Failed jobs read (all products, newest first); at most FAILED_SCAN_LIMIT. */
  scanned: number;
  /** True when the failed set holds more jobs than were scanned, so `count` may be low. */
  truncated: boolean;
}

export type FailedJobsOf = (productId: string) => Promise<FailedJobs>;

function field(data: unknown, name: string): unknown {
  return typeof data === 'object' && data !== null ? (data as Record<string, unknown>)[name] : undefined;
}

/**
 * Reads the newest FAILED_SCAN_LIMIT jobs of each queue's failed set (one queue per master on a
 * cluster) and keeps those of the product.
 */
export async function failedJobsOf<T>(
  queues: Queue<T> | readonly Queue<T>[],
  productId: string,
): Promise<FailedJobs> {
  const list = Array.isArray(queues) ? queues : [queues as Queue<T>];
  const reads = await Promise.all(
    list.map((queue) =>
      Promise.all([
        queue.getFailed(0, FAILED_SCAN_LIMIT - 1) as Promise<(Job<T> | undefined)[]>,
        queue.getFailedCount(),
      ]),
    ),
  );
  const jobs = reads.flatMap(([j]) => j);
  const total = reads.reduce((sum, [, n]) => sum + n, 0);
  // A job removed between reading the set and reading the job comes back undefined.
  const present = jobs.filter((j): j is Job<T> => j !== undefined && j !== null);
  const mine = present
    .filter((j) => field(j.data, 'productId') === productId)
    .sort((a, b) => (b.finishedOn ?? 0) - (a.finishedOn ?? 0));
  return {
    count: mine.length,
    recent: mine.slice(0, FAILED_RECENT_LIMIT).map((j) => {
      const orderId = field(j.data, 'orderId');
      return {
        orderId: typeof orderId === 'string' ? orderId : String(j.id),
        reason: j.failedReason ?? '',
        failedAt: j.finishedOn ? new Date(j.finishedOn).toISOString() : null,
      };
    }),
    scanned: present.length,
    truncated: total > jobs.length,
  };
}
