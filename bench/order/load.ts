// Fixed-time HTTP load with autocannon against one or more URLs (one instance per URL, connections
// split evenly, all in this process), every request a distinct order body.
//
// The measured window is [start, start + seconds): throughput and latency count only responses that
// arrive inside it. At the end of the window the connections switch to a path with no route (a
// side-effect-free 404) until every order sent has its answer (at most maxTailSeconds), and only then
// is autocannon stopped: it destroys its connections with requests in flight, and an order the server
// accepted but whose 202 the client never saw would break "rows == accepted". `unknown` counts orders
// sent without an answer (0 unless the tail ran out).
//
// With `timeline: true` every answered real order (window and tail) is also recorded as (start, end,
// status): end is performance.now() when autocannon emits the response (synchronously, right after
// parsing it), start is end minus autocannon's own response time (from writing the request to the
// last byte of the answer, process.hrtime). Both are on the monotonic clock, so they can be laid over
// other events timed in this process (e.g. an admin call's window).
import { performance } from 'node:perf_hooks';
import autocannon from 'autocannon';

/** No route: the app answers 404 without touching Redis. */
export const TAIL_PATH = '/bench-tail-no-route';

export interface LoadTarget {
  /** Base URL of an API process, e.g. http://127.0.0.1:4000 */
  url: string;
  /** Path with query, e.g. /api/orders or /bench/unlocked?enqueue=1 */
  path: string;
}

export interface LoadOptions {
  targets: LoadTarget[];
  productId: string;
  /** userIds are `<userPrefix>-<instance>-<n>`: distinct across the whole run. */
  userPrefix: string;
  connections: number;
  seconds: number;
  /** The status that counts as a successful answer of this scenario (202, or 409 for sold out). */
  expectStatus: number;
  /** Longest wait after the window for answers to orders in flight. Default 15 s. */
  maxTailSeconds?: number;
  /** Record (start, end, status) of every answered real order: LoadResult.timeline. */
  timeline?: boolean;
}

/** Every answered real order, in order of answer: performance.now() ms at send and answer. */
export interface Timeline {
  start: Float64Array;
  end: Float64Array;
  status: Uint16Array;
}

export interface LoadProgress {
  /** 2xx answers to real orders so far (live, for the writer sampler). */
  accepted: number;
}

export interface LoadResult {
  /** Length of the measured window, s. */
  seconds: number;
  /** Answers with the expected status inside the window. */
  ok: number;
  okPerSecond: number;
  /** Latencies (ms) of every answer inside the window, any status. */
  latencies: Float64Array;
  /** Statuses of all answers to real orders (window and tail). */
  statuses: Record<string, number>;
  /** 2xx answers to real orders (window and tail): what the client knows was accepted. */
  accepted: number;
  /** Answers inside the window with another status than expected. */
  unexpected: number;
  /** Connection errors and timeouts (autocannon). */
  errors: number;
  timeouts: number;
  /** Real orders sent / answered; unknown = sent - answered (outcome unknown to the client). */
  realSent: number;
  realAnswered: number;
  unknown: number;
  /** Answers to the tail (no route) requests. */
  tailAnswered: number;
  /** Only with LoadOptions.timeline. */
  timeline?: Timeline;
}

export interface RunningLoad {
  progress: LoadProgress;
  /** performance.now() at the start and end of the measured window. */
  startedAt: number;
  deadline: number;
  done: Promise<LoadResult>;
}

export function startLoad(o: LoadOptions): RunningLoad {
  const maxTailSeconds = o.maxTailSeconds ?? 15;
  const progress: LoadProgress = { accepted: 0 };
  const startedAt = performance.now();
  const deadline = startedAt + o.seconds * 1000;
  let inTail = false;
  const instances: autocannon.Instance[] = [];
  let poll: NodeJS.Timeout | undefined;
  const tailTimer = setTimeout(() => {
    inTail = true;
    // No order is sent from now on: stop as soon as every one sent has its answer.
    poll = setInterval(() => {
      if (realAnswered >= realSent) {
        clearInterval(poll);
        for (const inst of instances) inst.stop();
      }
    }, 10);
  }, o.seconds * 1000);

  const latencies: number[] = [];
  const statuses: Record<string, number> = {};
  let ok = 0;
  let unexpected = 0;
  let realSent = 0;
  let realAnswered = 0;
  let tailAnswered = 0;
  const tStart: number[] = [];
  const tEnd: number[] = [];
  const tStatus: number[] = [];
  const perInstance = Math.max(1, Math.floor(o.connections / o.targets.length));

  const runs = o.targets.map((target, instance) => {
    let n = 0;
    // userIds allow [A-Za-z0-9_.:@-] only.
    const prefix = `${o.userPrefix.replace(/[^A-Za-z0-9_.:@-]/g, '_')}-${instance}-`;
    const real = `{"productId":"${o.productId}","quantity":1,"userId":"${prefix}`;
    return new Promise<autocannon.Result>((resolve, reject) => {
      const inst = autocannon(
        {
          url: target.url,
          connections: perInstance,
          pipelining: 1,
          duration: o.seconds + maxTailSeconds,
          headers: { 'content-type': 'application/json' },
          requests: [
            {
              method: 'POST',
              path: target.path,
              setupRequest: (req) => {
                n += 1;
                if (inTail) {
                  req.path = TAIL_PATH;
                  // Never an empty body: autocannon keeps the last Content-Length in the request's
                  // headers (its builder writes it into the shared object), so a request without a
                  // body would announce the previous order's length and swallow the next request.
                  req.body = '{}';
                } else {
                  realSent += 1;
                  req.body = `${real}${n}"}`;
                }
                return req;
              },
            },
          ],
        },
        (err, result) => (err ? reject(err) : resolve(result)),
      );
      instances.push(inst);
      inst.on('response', (_client, statusCode, _bytes, responseTime) => {
        const now = performance.now();
        // A real order never gets a 404 (its product exists): after the window, 404 is the tail's.
        if (statusCode === 404 && inTail) {
          tailAnswered += 1;
          return;
        }
        realAnswered += 1;
        statuses[statusCode] = (statuses[statusCode] ?? 0) + 1;
        if (o.timeline) {
          tStart.push(now - responseTime);
          tEnd.push(now);
          tStatus.push(statusCode);
        }
        if (statusCode >= 200 && statusCode < 300) progress.accepted += 1;
        if (now < deadline) {
          latencies.push(responseTime);
          if (statusCode === o.expectStatus) ok += 1;
          else unexpected += 1;
        }
      });
    });
  });

  const done = Promise.all(runs)
    .then((results) => {
      const seconds = o.seconds;
      return {
        seconds,
        ok,
        okPerSecond: ok / seconds,
        latencies: Float64Array.from(latencies),
        statuses,
        accepted: progress.accepted,
        unexpected,
        errors: results.reduce((a, r) => a + r.errors, 0),
        timeouts: results.reduce((a, r) => a + r.timeouts, 0),
        realSent,
        realAnswered,
        unknown: realSent - realAnswered,
        tailAnswered,
        timeline: o.timeline
          ? {
              start: Float64Array.from(tStart),
              end: Float64Array.from(tEnd),
              status: Uint16Array.from(tStatus),
            }
          : undefined,
      };
    })
    .finally(() => {
      clearTimeout(tailTimer);
      clearInterval(poll);
    });
  return { progress, startedAt, deadline, done };
}
