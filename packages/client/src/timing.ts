// Waiting: an abortable sleep, the backoff of retries (doubling, capped, jittered, never sooner than
// the service's Retry-After), and reading Retry-After.

/** How placeOrder spaces retries of an answer it may retry (busy, rate_limited, 503 unavailable, network errors). */
export interface RetryOptions {
  /** First backoff, doubled per retry in a row. Default 250 ms. */
  baseDelayMs?: number;
  /** Longest backoff. Default 30 000 ms. */
  maxDelayMs?: number;
  /** Attempts in a row without a usable answer before giving up with UnreachableError. Default 30. */
  maxAttempts?: number;
}

export type Retry = Required<RetryOptions>;

export function retryWith(options: RetryOptions = {}): Retry {
  return { baseDelayMs: 250, maxDelayMs: 30_000, maxAttempts: 30, ...options };
}

/**
 * The pause before retry `attempt` (1-based): doubling from baseDelayMs up to maxDelayMs, its upper
 * half drawn at random so that a herd refused together does not come back together; at least `floorMs`.
 */
export function backoff(retry: Retry, attempt: number, floorMs = 0): number {
  const cap = Math.min(retry.maxDelayMs, retry.baseDelayMs * 2 ** Math.min(attempt - 1, 30));
  return Math.max(floorMs, Math.round(cap / 2 + (Math.random() * cap) / 2));
}

/** `Retry-After` in ms (whole seconds, or an HTTP date); 0 when absent or unreadable. */
export function retryAfterMs(headers: Headers | undefined, now = Date.now()): number {
  const value = headers?.get('retry-after');
  if (!value) return 0;
  const seconds = Number(value);
  if (Number.isFinite(seconds)) return Math.max(0, seconds * 1000);
  const at = Date.parse(value);
  return Number.isNaN(at) ? 0 : Math.max(0, at - now);
}

/** Resolves after `ms`, or rejects with the signal's reason when it aborts first. */
export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal?.reason);
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}
