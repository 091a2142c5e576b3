// Failed admin attempts per client address (the admin door's brute-force brake): a token bucket of
// failures per address, whose emptiness is what the brake (admin-brake.ts) answers 429 on.
import { type RateLimit, TokenBuckets } from './token-buckets.ts';

/**
 * A token bucket of failures per address: `burst` wrong tokens, then `rate` a second. `blockedFor`
 * only reads; `fail` takes a token. Memory is bounded as TokenBuckets' is.
 */
export class FailedAttempts {
  private readonly buckets: TokenBuckets;

  constructor(limit: RateLimit, maxKeys = 10_000) {
    this.buckets = new TokenBuckets(limit, maxKeys);
  }

  /** Whole seconds `address` is braked for; 0: it is not. */
  blockedFor(address: string, now: number): number {
    return Math.ceil(this.buckets.peek(address, now));
  }

  /** Records a wrong token from `address`: whole seconds it is braked for now (0: not braked). */
  fail(address: string, now: number): number {
    return Math.ceil(this.buckets.take(address, now));
  }
}
