// The orders queue as the writer gauges read it: job counts by state and the oldest jobs, summed over
// the queues of a cluster's masters, and the writer's lag computed from the oldest waiting job.

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
