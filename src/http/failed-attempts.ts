// Failed admin attempts per client address (the admin door's brute-force brake): an address that
// sent too many wrong tokens is refused without its token being looked at, until its bucket refills.
import { type RateLimit, TokenBuckets } from './token-buckets.ts';

/**
 * A token bucket of failures per address. `blockedFor` only reads (a right token costs nothing);
 * `fail` takes a token. Memory is bounded as TokenBuckets' is.
 */
export class FailedAttempts {
  private readonly buckets: TokenBuckets;
  /** Addresses whose bucket ran dry, and from when (ms) they may try again. */
  private readonly until = new Map<string, number>();

  constructor(
    limit: RateLimit,
    private readonly maxKeys = 10_000,
  ) {
    this.buckets = new TokenBuckets(limit, maxKeys);
  }

  /** Seconds `address` must wait before its next attempt is looked at; 0: look at it. */
  blockedFor(address: string, now: number): number {
    const at = this.until.get(address);
    if (at === undefined) return 0;
    if (now >= at) {
      this.until.delete(address);
      return 0;
    }
    return Math.ceil((at - now) / 1000);
  }

  /** Records a wrong token from `address`. */
  fail(address: string, now: number): void {
    const wait = this.buckets.take(address, now);
    if (wait === 0) return;
    if (this.until.size >= this.maxKeys) this.until.delete(this.until.keys().next().value as string);
    this.until.set(address, now + wait * 1000);
  }
}
