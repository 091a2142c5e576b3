// Open-model HTTP load for the overload phase: orders are sent on a fixed schedule (`rate` a second)
// whether or not earlier ones were answered, as a crowd does, and each latency is counted from the
// order's *scheduled* send time, so time spent waiting for a free connection on this side counts
// too (no coordinated omission). autocannon is closed-model (a connection sends its next request
// only after an answer), which hides exactly the queueing an overload test is about.
//
// Connections: one undici Pool per target with at most `connections` sockets; an order sent while
// all are busy waits in the pool (and that wait is in its latency). undici rather than node:http: on
// one shared machine every microsecond the generator spends is taken from the service it measures,
// and node:http costs several times more per request. Every order is a distinct buyer with its own
// Idempotency-Key; nothing is retried: the answers are what is measured.
import { performance } from 'node:perf_hooks';
import { Pool } from 'undici';

export interface OpenLoadOptions {
  /** Base URLs of the API (one agent each, orders spread round-robin). */
  urls: string[];
  productId: string;
  userPrefix: string;
  /** Orders a second, all targets together. */
  rate: number;
  seconds: number;
  /** Most sockets per target. */
  connections: number;
  /** An order unanswered this long counts as a timeout (its socket is destroyed). */
  timeoutMs: number;
}

export interface OpenLoadResult {
  rate: number;
  seconds: number;
  sent: number;
  /** Latency (ms) from scheduled send to answer, of every answered order. */
  latencies: Float64Array;
  statuses: Record<string, number>;
  /** 202 answers: what the client knows was accepted. */
  accepted: number;
  /** 429 and 503 answers, and how many of them carried no Retry-After. */
  refused: number;
  refusedWithoutRetryAfter: number;
  /** Connection-level failures by code (ECONNRESET, EPIPE, ...) and timeouts. */
  errors: Record<string, number>;
  timeouts: number;
  /** Orders sent but without an answer (reset, timeout): their outcome is unknown to the client. */
  unknown: number;
  /** ms from the first scheduled send to the last answer. */
  spanMs: number;
  /** How far behind schedule the sender fell at worst (ms): this process's own lag. */
  maxSendLagMs: number;
}

/** What the answers add up to as they come. */
interface Counts {
  latencies: number[];
  statuses: Record<string, number>;
  errors: Record<string, number>;
  accepted: number;
  refused: number;
  refusedWithoutRetryAfter: number;
  timeouts: number;
  answered: number;
  lastAnswer: number;
}

function countAnswer(c: Counts, status: number, retryAfter: unknown, scheduled: number): void {
  const now = performance.now();
  c.answered += 1;
  c.lastAnswer = now;
  c.latencies.push(now - scheduled);
  c.statuses[status] = (c.statuses[status] ?? 0) + 1;
  if (status === 202) c.accepted += 1;
  if (status === 429 || status === 503) {
    c.refused += 1;
    if (!retryAfter) c.refusedWithoutRetryAfter += 1;
  }
}

/** The undici pool a load sends its orders through; the timeouts count from when a request went out on a socket, as a client's read timeout does. */
export function orderPool(url: string, connections: number, timeoutMs: number): Pool {
  return new Pool(url, {
    connections,
    headersTimeout: timeoutMs,
    bodyTimeout: timeoutMs,
    keepAliveTimeout: 60_000,
  });
}

/** A failed request's code: a reset arrives as undici's socket error with the system error as cause. */
export function failureCode(err: unknown): string {
  const e = err as NodeJS.ErrnoException & { cause?: NodeJS.ErrnoException };
  return e.cause?.code ?? e.code ?? e.message;
}

function countFailure(c: Counts, err: unknown): void {
  const code = failureCode(err);
  if (code === 'UND_ERR_HEADERS_TIMEOUT' || code === 'UND_ERR_BODY_TIMEOUT') c.timeouts += 1;
  else c.errors[code] = (c.errors[code] ?? 0) + 1;
}

/** Calls `send` for order i at start + i x interval (catching up when late); returns the worst lag. */
async function schedule(
  total: number,
  intervalMs: number,
  start: number,
  send: (i: number, scheduled: number) => Promise<void>,
): Promise<{ inFlight: Promise<void>[]; maxSendLagMs: number }> {
  const inFlight: Promise<void>[] = [];
  let maxSendLagMs = 0;
  let next = 0;
  await new Promise<void>((resolve) => {
    const tick = () => {
      const now = performance.now();
      while (next < total && start + next * intervalMs <= now) {
        const scheduled = start + next * intervalMs;
        maxSendLagMs = Math.max(maxSendLagMs, now - scheduled);
        inFlight.push(send(next, scheduled));
        next += 1;
      }
      if (next >= total) resolve();
      else setTimeout(tick, Math.max(0, Math.min(5, start + next * intervalMs - performance.now())));
    };
    setTimeout(tick, start - performance.now());
  });
  return { inFlight, maxSendLagMs };
}

/** Runs the schedule to its end and waits for every answer (or timeout). */
export async function openLoad(o: OpenLoadOptions): Promise<OpenLoadResult> {
  const pools = o.urls.map((url) => orderPool(url, o.connections, o.timeoutMs));
  const c: Counts = {
    latencies: [],
    statuses: {},
    errors: {},
    accepted: 0,
    refused: 0,
    refusedWithoutRetryAfter: 0,
    timeouts: 0,
    answered: 0,
    lastAnswer: 0,
  };
  const send = async (i: number, scheduled: number): Promise<void> => {
    const userId = `${o.userPrefix}-${i}`;
    try {
      const res = await (pools[i % pools.length] as Pool).request({
        path: '/api/orders',
        method: 'POST',
        headers: { 'content-type': 'application/json', 'idempotency-key': userId },
        body: JSON.stringify({ productId: o.productId, userId, quantity: 1 }),
      });
      await res.body.dump();
      countAnswer(c, res.statusCode, res.headers['retry-after'], scheduled);
    } catch (err) {
      countFailure(c, err);
    }
  };
  const total = Math.round(o.rate * o.seconds);
  const start = performance.now() + 20;
  const { inFlight, maxSendLagMs } = await schedule(total, 1000 / o.rate, start, send);
  await Promise.all(inFlight);
  await Promise.all(pools.map((p) => p.close()));
  const { latencies, answered, lastAnswer, ...counts } = c;
  return {
    ...counts,
    rate: o.rate,
    seconds: o.seconds,
    sent: total,
    latencies: Float64Array.from(latencies),
    unknown: total - answered,
    spanMs: (answered > 0 ? lastAnswer : performance.now()) - start,
    maxSendLagMs,
  };
}
