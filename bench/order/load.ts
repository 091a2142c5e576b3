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
import { type LoadProgress, type LoadResult, LoadTally } from './load-tally.ts';

export type { LoadProgress, LoadResult, Timeline } from './load-tally.ts';

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

export interface RunningLoad {
  progress: LoadProgress;
  /** performance.now() at the start and end of the measured window. */
  startedAt: number;
  deadline: number;
  done: Promise<LoadResult>;
}

/** One autocannon instance on `target`, every request a distinct order until the tail begins. */
function instance(
  o: LoadOptions,
  tally: LoadTally,
  target: LoadTarget,
  index: number,
  connections: number,
): { inst: autocannon.Instance; done: Promise<autocannon.Result> } {
  let n = 0;
  // userIds allow [A-Za-z0-9_.:@-] only.
  const prefix = `${o.userPrefix.replace(/[^A-Za-z0-9_.:@-]/g, '_')}-${index}-`;
  const real = `{"productId":"${o.productId}","quantity":1,"userId":"${prefix}`;
  const setupRequest = (req: autocannon.Request) => {
    n += 1;
    if (tally.inTail) {
      req.path = TAIL_PATH;
      // Never an empty body: autocannon keeps the last Content-Length in the request's headers (its
      // builder writes it into the shared object), so a request without a body would announce the
      // previous order's length and swallow the next request.
      req.body = '{}';
    } else {
      tally.realSent += 1;
      req.body = `${real}${n}"}`;
    }
    return req;
  };
  let settle: (err: Error | null, result: autocannon.Result) => void = () => {};
  const done = new Promise<autocannon.Result>((resolve, reject) => {
    settle = (err, result) => (err ? reject(err) : resolve(result));
  });
  const inst = autocannon(
    {
      url: target.url,
      connections,
      pipelining: 1,
      duration: o.seconds + (o.maxTailSeconds ?? 15),
      headers: { 'content-type': 'application/json' },
      requests: [{ method: 'POST', path: target.path, setupRequest }],
    },
    (err, result) => settle(err, result),
  );
  inst.on('response', (_client, statusCode, _bytes, responseTime) =>
    tally.answer(statusCode, responseTime, performance.now()),
  );
  return { inst, done };
}

export function startLoad(o: LoadOptions): RunningLoad {
  const startedAt = performance.now();
  const deadline = startedAt + o.seconds * 1000;
  const tally = new LoadTally(o, deadline);
  const perInstance = Math.max(1, Math.floor(o.connections / o.targets.length));
  const runs = o.targets.map((target, i) => instance(o, tally, target, i, perInstance));
  let poll: NodeJS.Timeout | undefined;
  const tailTimer = setTimeout(() => {
    tally.inTail = true;
    // No order is sent from now on: stop as soon as every one sent has its answer.
    poll = setInterval(() => {
      if (tally.realAnswered >= tally.realSent) {
        clearInterval(poll);
        for (const r of runs) r.inst.stop();
      }
    }, 10);
  }, o.seconds * 1000);
  const done = Promise.all(runs.map((r) => r.done))
    .then((results) => tally.result(results))
    .finally(() => {
      clearTimeout(tailTimer);
      clearInterval(poll);
    });
  return { progress: tally.progress, startedAt, deadline, done };
}
