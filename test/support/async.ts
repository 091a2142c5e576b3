// Waiting in tests: poll until a condition holds, and note when a promise settles.
import assert from 'node:assert/strict';
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';

/** Polls `check` every 5 ms until it is true; fails the test after timeoutMs, naming `what`. */
export async function until(what: string, check: () => Promise<boolean>, timeoutMs = 3000): Promise<void> {
  const end = performance.now() + timeoutMs;
  while (performance.now() < end) {
    if (await check()) return;
    await sleep(5);
  }
  assert.fail(`timed out waiting for: ${what}`);
}

/** Tracks when a promise settles, so a test can assert it is still pending and time its outcome. */
export function track<T>(p: Promise<T>): { promise: Promise<T>; settledAt: () => number | undefined } {
  let at: number | undefined;
  const promise = p.finally(() => {
    at = performance.now();
  });
  promise.catch(() => {});
  return { promise, settledAt: () => at };
}
