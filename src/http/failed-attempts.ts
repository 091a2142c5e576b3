// Failed admin attempts per client address (the admin door's brute-force brake): an address that
// sent too many wrong tokens is refused without its token being looked at, until its bucket refills.
import { type RateLimit, TokenBuckets } from './token-buckets.ts';

/**
 * A token bucket of failures per address: `burst` wrong tokens, then `rate` a second. `blockedFor`
 * only reads (a right token costs nothing); `fail` takes a token. Memory is bounded as TokenBuckets' is.
 */
export class FailedAttempts {
  private readonly buckets: TokenBuckets;

  constructor(limit: RateLimit, maxKeys = 10_000) {
    this.buckets = new TokenBuckets(limit, maxKeys);
  }

  /** Whole seconds `address` must wait before its next token is looked at; 0: look at it. */
  blockedFor(address: string, now: number): number {
    return Math.ceil(this.buckets.peek(address, now));
  }

  /** Records a wrong token from `address`. */
  fail(address: string, now: number): void {
    this.buckets.take(address, now);
  }
}
