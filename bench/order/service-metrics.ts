// The service's own Prometheus counters as the order bench reads them: one metric summed over its
// samples, and the shard locks' hand-offs and waits summed over API processes.

/** Sum of a metric's samples (optionally only those whose labels contain `labels`); 0 if absent. */
export async function metric(url: string, name: string, labels = ''): Promise<number> {
  const text = await (await fetch(`${url}/metrics`)).text();
  let sum = 0;
  for (const m of text.matchAll(new RegExp(`^${name}(\\{[^}]*\\})? (\\S+)$`, 'gm'))) {
    if (labels && !(m[1] ?? '').includes(labels)) continue;
    sum += Number(m[2]);
  }
  return sum;
}

export interface LockCounters {
  handoffs: number;
  waits: number;
  waitSeconds: number;
}

/** The service's shard-lock counters, summed over API processes. */
export async function lockCounters(urls: string[]): Promise<LockCounters> {
  const shard = 'lock="shard"';
  const per = await Promise.all(
    urls.map(async (url) => ({
      handoffs: await metric(url, 'flashsale_lock_handoffs_total', shard),
      waits: await metric(url, 'flashsale_lock_wait_seconds_count', shard),
      waitSeconds: await metric(url, 'flashsale_lock_wait_seconds_sum', shard),
    })),
  );
  return per.reduce((a, b) => ({
    handoffs: a.handoffs + b.handoffs,
    waits: a.waits + b.waits,
    waitSeconds: a.waitSeconds + b.waitSeconds,
  }));
}

/** Hand-offs per accepted order and mean wait (ms) between two readings of {@link lockCounters}. */
export function lockFigures(
  before: LockCounters,
  after: LockCounters,
  accepted: number,
): { handoffsPerOrder: number; meanWaitMs: number } {
  const waits = after.waits - before.waits;
  return {
    handoffsPerOrder: (after.handoffs - before.handoffs) / Math.max(1, accepted),
    meanWaitMs: waits > 0 ? ((after.waitSeconds - before.waitSeconds) / waits) * 1000 : Number.NaN,
  };
}

/** The statuses other than `expect`, as `409:12 503:1`. */
export function statusText(statuses: Record<string, number>, expect: number): string {
  return Object.entries(statuses)
    .filter(([s]) => Number(s) !== expect)
    .map(([s, n]) => `${s}:${n}`)
    .join(' ');
}
