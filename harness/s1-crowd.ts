// A crowd of buyers as issue 38's S1 load: a fixed number of buyers, so many at a time, each sending
// its order until it is answered other than 429 or 503 (busy, unavailable: again after Retry-After;
// queued: again with its ticket after retryAfterMs), up to a number of tries.
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import { Pool } from 'undici';

export interface BuyersOptions {
  url: string;
  productId: string;
  /** userIds (and Idempotency-Keys) are `<userPrefix>-<n>`. */
  userPrefix: string;
  /** Default 3,000. */
  buyers?: number;
  /** Buyers sending at once (default 100). */
  inFlight?: number;
  /** Tries per buyer before it gives up on 429s (default 40). */
  tries?: number;
  /**
   * The pause (ms) before the next try after `answer` ("429 busy", ...) asked for `ms` (Retry-After,
   * or a queued answer's retryAfterMs); default `ms` itself. A test may shorten it: the tries, not
   * the time, bound what it asserts.
   */
  pauseMs?: (ms: number, answer: string) => number;
  /**
   * Once an answer's key ("429 busy", ...) makes this true, no buyer sends again: a test that
   * forbids an answer need not wait out the crowd's retries once it came.
   */
  stopOn?: (key: string) => boolean;
}

export interface BuyersResult {
  /** Every answer, by "status error" ("202", "409 sold_out", "429 busy", ...). */
  answers: Record<string, number>;
  /** Each buyer's last answer, by the same key: the crowd's fates (of those that sent, with stopOn). */
  fates: Record<string, number>;
  /** Milliseconds from the first request to the last 202 (0 if none). */
  sellMs: number;
  /** Every answer's latency (ms), in order of answer. */
  latencies: number[];
  /** Orders that got no answer (a reset, a timeout), by code. */
  errors: Record<string, number>;
}

const count = (to: Record<string, number>, key: string) => {
  to[key] = (to[key] ?? 0) + 1;
};

/** Runs the crowd until every buyer has its last answer. */
export async function buyers(o: BuyersOptions): Promise<BuyersResult> {
  const { buyers: total = 3000, inFlight = 100, tries = 40 } = o;
  const pauseMs = o.pauseMs ?? ((ms: number) => ms);
  const pool = new Pool(o.url, { connections: inFlight, keepAliveTimeout: 60_000 });
  const result: BuyersResult = { answers: {}, fates: {}, sellMs: 0, latencies: [], errors: {} };
  const start = performance.now();
  let stopped = false;
  const buyer = async (n: number): Promise<string> => {
    const userId = `${o.userPrefix}-${n}`;
    const body = JSON.stringify({ productId: o.productId, userId, quantity: 1 });
    const headers: Record<string, string> = { 'content-type': 'application/json', 'idempotency-key': userId };
    for (let attempt = 1; ; attempt++) {
      const sent = performance.now();
      const res = await pool.request({ path: '/api/orders', method: 'POST', headers, body });
      const answer = (await res.body.json().catch(() => ({}))) as Record<string, unknown>;
      const done = performance.now();
      result.latencies.push(done - sent);
      const key = res.statusCode === 202 ? '202' : `${res.statusCode} ${String(answer.error)}`;
      count(result.answers, key);
      if (res.statusCode === 202) result.sellMs = Math.max(result.sellMs, done - start);
      if (o.stopOn?.(key)) stopped = true;
      const again = res.statusCode === 429 || (res.statusCode === 503 && res.headers['retry-after']);
      if (!again || attempt >= tries || stopped) return key;
      const queued = answer.error === 'queued' && typeof answer.ticket === 'string';
      if (queued) headers['queue-ticket'] = answer.ticket as string;
      const asked = queued ? Number(answer.retryAfterMs) : 1000 * Number(res.headers['retry-after']);
      await sleep(pauseMs(asked || 1000, key));
    }
  };
  let next = 0;
  try {
    await Promise.all(
      Array.from({ length: inFlight }, async () => {
        while (next < total && !stopped) {
          const n = next++;
          const fate = await buyer(n).catch((err: NodeJS.ErrnoException & { cause?: { code?: string } }) => {
            count(result.errors, err.cause?.code ?? err.code ?? err.message);
            return 'error';
          });
          count(result.fates, fate);
        }
      }),
    );
  } finally {
    await pool.close();
  }
  return result;
}
