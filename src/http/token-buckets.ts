// Token buckets keyed by a string (a buyer, a client address), in process memory: `rate` requests a
// second with bursts of `burst`, at most `maxKeys` buckets held (least recently used dropped first).

/** A rate limit: `rate` tokens a second refill a bucket of `burst`. */
export interface RateLimit {
  rate: number;
  burst: number;
}

interface Bucket {
  tokens: number;
  /** performance.now()-style ms of the last refill. */
  at: number;
}

/**
 * One token bucket per key. Memory is bounded: beyond `maxKeys` the least recently used bucket is
 * dropped. A dropped bucket comes back full, which can only let a key through early, never refuse
 * it wrongly; sized above the keys active within one refill time (burst / rate), it only drops full
 * buckets, which are the same as absent ones. The Map keeps insertion order, and every take
 * re-inserts its key, so the first key is always the least recently used: O(1) per take, no timers.
 */
export class TokenBuckets {
  private readonly buckets = new Map<string, Bucket>();

  constructor(
    private readonly limit: RateLimit,
    private readonly maxKeys = 100_000,
  ) {}

  /** Takes a token of `key` at `now` (ms): 0 when taken, else the seconds until one is there. */
  take(key: string, now: number): number {
    const tokens = this.tokens(key, now);
    // Re-inserted below as the most recently used; a new key beyond maxKeys drops the least recently used.
    if (!this.buckets.delete(key) && this.buckets.size >= this.maxKeys) {
      this.buckets.delete(this.buckets.keys().next().value as string);
    }
    const allowed = tokens >= 1;
    this.buckets.set(key, { tokens: allowed ? tokens - 1 : tokens, at: now });
    return allowed ? 0 : (1 - tokens) / this.limit.rate;
  }

  /** What `take` would answer at `now`, taking nothing. */
  peek(key: string, now: number): number {
    const tokens = this.tokens(key, now);
    return tokens >= 1 ? 0 : (1 - tokens) / this.limit.rate;
  }

  /** The tokens of `key`'s bucket at `now` (a bucket not held is full). */
  private tokens(key: string, now: number): number {
    const { rate, burst } = this.limit;
    const b = this.buckets.get(key);
    return b ? Math.min(burst, b.tokens + ((now - b.at) / 1000) * rate) : burst;
  }

  /** Buckets held (for tests and metrics). */
  get size(): number {
    return this.buckets.size;
  }
}
