// Clean-ups that must happen but must not hold up an answer (store an Idempotency-Key's answer,
// give back a limit claim, resolve an attempt whose reply was lost): tried once at once and, while
// Redis is unreachable, again in the background with backoff for a bounded time. Only for operations
// that are safe to run twice.
import { setTimeout as sleep } from 'node:timers/promises';

const DEFAULT_BUDGET_MS = 60_000;

/** Runs `op` now; if it fails, retries it in the background for up to `budgetMs`. Never throws. */
export async function eventually(op: () => Promise<unknown>, budgetMs = DEFAULT_BUDGET_MS): Promise<void> {
  try {
    await op();
    return;
  } catch {
    // Redis unreachable (or the reply was lost): retry below, without holding up the caller.
  }
  void (async () => {
    const deadline = Date.now() + budgetMs;
    let pause = 100;
    while (Date.now() < deadline) {
      await sleep(pause, undefined, { ref: false });
      pause = Math.min(pause * 2, 2000);
      try {
        await op();
        return;
      } catch {
        // still unreachable
      }
    }
  })();
}
