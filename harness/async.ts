// Waiting in tests: the one poll-until helper and the one promise-timeout helper of the suite, a
// tracker that tells whether a promise has settled yet, and waiting for Redis' clock.
import { setTimeout as sleep } from 'node:timers/promises';

export interface UntilOptions {
  /** Give up after this long (a failure bound, not a timing assertion); default 30 s. */
  timeoutMs?: number;
  /** Pause between checks; default 5 ms. */
  everyMs?: number;
}

/**
 * Polls `check` until it returns a value other than false/undefined/null and returns that value;
 * throws naming `what` (and the last value seen, via `describe`) once timeoutMs has passed.
 */
export async function until<T>(
  what: string,
  check: () => Promise<T | false | undefined | null> | T | false | undefined | null,
  options: UntilOptions & { describe?: () => Promise<string> | string } = {},
): Promise<T> {
  const { timeoutMs = 30_000, everyMs = 5 } = options;
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const got = await check();
    if (got !== false && got !== undefined && got !== null) return got;
    if (Date.now() > deadline) {
      const detail = options.describe ? `: ${await options.describe()}` : '';
      throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}${detail}`);
    }
    await sleep(everyMs);
  }
}

/** Redis' clock in ms (TIME): the clock leases, deadlines and queue stamps are judged by. */
export async function redisNow(client: { time(): Promise<unknown> }): Promise<number> {
  const [seconds, micros] = (await client.time()) as [string | number, string | number];
  return Number(seconds) * 1000 + Math.floor(Number(micros) / 1000);
}

/** Waits until Redis' clock is past `ms` (e.g. a deadline a script stamped with that clock). */
export async function untilRedisPasses(client: { time(): Promise<unknown> }, ms: number, what: string) {
  await until(what, async () => (await redisNow(client)) > ms);
}

/**
 * Resolves once every command sent on this connection before the call has been answered and its reply
 * handled: one connection answers in order, and a turn of the event loop runs the handlers' promise
 * continuations. Orders a test after "whatever that client had in flight", without a sleep.
 */
export async function repliesHandled(redis: { ping(): Promise<unknown> }): Promise<void> {
  await redis.ping();
  await new Promise((resolve) => setImmediate(resolve));
}

/** `p`, or a rejection naming `what` if it has not settled within ms (the timer never outlives it). */
export async function withTimeout<T>(p: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what} did not finish within ${ms} ms`)), ms);
  });
  try {
    return await Promise.race([p, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

/** Tracks whether a promise has settled, so a test can assert it is still pending. */
export function track<T>(p: Promise<T>): { promise: Promise<T>; settled: () => boolean } {
  let done = false;
  const promise = p.finally(() => {
    done = true;
  });
  promise.catch(() => {});
  return { promise, settled: () => done };
}
