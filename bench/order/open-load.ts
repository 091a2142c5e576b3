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

/** Runs the schedule to its end and waits for every answer (or timeout). */
export async function openLoad(o: OpenLoadOptions): Promise<OpenLoadResult> {
  // The timeouts count from when the request went out on a socket, as a client's read timeout does.
  const pools = o.urls.map(
    (url) =>
      new Pool(url, {
        connections: o.connections,
        headersTimeout: o.timeoutMs,
        bodyTimeout: o.timeoutMs,
        keepAliveTimeout: 60_000,
      }),
  );
  const total = Math.round(o.rate * o.seconds);
  const intervalMs = 1000 / o.rate;
  const latencies: number[] = [];
  const statuses: Record<string, number> = {};
  const errors: Record<string, number> = {};
  let accepted = 0;
  let refused = 0;
  let refusedWithoutRetryAfter = 0;
  let timeouts = 0;
  let answered = 0;
  let lastAnswer = 0;
  let maxSendLagMs = 0;
  const start = performance.now() + 20;

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
      const now = performance.now();
      const status = res.statusCode;
      answered += 1;
      lastAnswer = now;
      latencies.push(now - scheduled);
      statuses[status] = (statuses[status] ?? 0) + 1;
      if (status === 202) accepted += 1;
      if (status === 429 || status === 503) {
        refused += 1;
        if (!res.headers['retry-after']) refusedWithoutRetryAfter += 1;
      }
    } catch (err) {
      const e = err as NodeJS.ErrnoException & { cause?: NodeJS.ErrnoException };
      if (e.code === 'UND_ERR_HEADERS_TIMEOUT' || e.code === 'UND_ERR_BODY_TIMEOUT') timeouts += 1;
      else {
        // A reset arrives as undici's socket error with the system error (ECONNRESET, EPIPE) as cause.
        const code = e.cause?.code ?? e.code ?? e.message;
        errors[code] = (errors[code] ?? 0) + 1;
      }
    }
  };

  const inFlight: Promise<void>[] = [];
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
    setTimeout(tick, 20);
  });
  await Promise.all(inFlight);
  await Promise.all(pools.map((p) => p.close()));
  return {
    rate: o.rate,
    seconds: o.seconds,
    sent: total,
    latencies: Float64Array.from(latencies),
    statuses,
    accepted,
    refused,
    refusedWithoutRetryAfter,
    errors,
    timeouts,
    unknown: total - answered,
    spanMs: (answered > 0 ? lastAnswer : performance.now()) - start,
    maxSendLagMs,
  };
}
