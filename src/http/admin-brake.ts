// The one brake on the admin token, wherever it is accepted (the /admin routes and the dashboard's
// data, the admin view of GET /api/orders/:id, and any door in front of express that takes it).
import { createHash, timingSafeEqual } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import { TooManyAttemptsError } from './auth-errors.ts';
import type { FailedAttempts } from './failed-attempts.ts';

/**
 * The admin token's check and its brake, shared by every door that accepts the token, so a guess
 * costs the same wherever it is made. The token is compared in constant time (digests of equal
 * length: neither content nor length leaks through timing). A wrong token is counted against its
 * address (ADMIN_AUTH_FAILURES); past the limit that address's wrong or missing tokens answer 429
 * `too_many_attempts`, where they would otherwise answer as no token would.
 *
 * The right token is honoured during a brake, and its failures keep being counted: otherwise anyone
 * behind the admin's NAT could lock the admin out with ten wrong tokens. So the brake does not stop
 * guessing, it makes it visible (`onFailure`: the metric) and bounded by the token itself, which
 * outside a development run has at least 32 characters (config/security.ts): at the probe's 760
 * guesses a second, finding even a 32-character lowercase token takes about 10^37 years.
 *
 * @example
 * const brake = new AdminBrake(config.admin.token, new FailedAttempts({ rate: 0.1, burst: 10 }));
 * if (!brake.admits(req.ip, bearerToken(req))) throw new HttpError('unauthorized', '…'); // 429 when braked
 */
export class AdminBrake {
  private readonly expected: Buffer;

  constructor(
    token: string,
    private readonly failures?: FailedAttempts | undefined,
    /** Hears every wrong token, and whether its address is braked (metrics). */
    private readonly onFailure?: (braked: boolean) => void,
  ) {
    this.expected = digest(token);
  }

  /** True for the admin token (constant time); takes no failure. */
  isAdmin(token: string | undefined): boolean {
    return token !== undefined && timingSafeEqual(digest(token), this.expected);
  }

  /**
   * The admin token from `address`? A wrong one is counted; a wrong or missing one from a braked
   * address throws TooManyAttemptsError.
   */
  admits(address: string | undefined, token: string | undefined, now = performance.now()): boolean {
    if (this.isAdmin(token)) return true;
    this.refused(address, token !== undefined, now);
    return false;
  }

  /**
   * A request from `address` whose credential is not the admin token: counts it when a token was
   * sent, and throws TooManyAttemptsError while the address is braked. For a door that takes other
   * credentials too (a buyer JWT), called once those failed as well.
   */
  refused(address: string | undefined, tokenSent: boolean, now = performance.now()): void {
    if (!this.failures) {
      if (tokenSent) this.onFailure?.(false);
      return;
    }
    const key = address ?? 'unknown';
    const wait = tokenSent ? this.failures.fail(key, now) : this.failures.blockedFor(key, now);
    if (tokenSent) this.onFailure?.(wait > 0);
    if (wait > 0) throw new TooManyAttemptsError(wait);
  }
}

function digest(token: string): Buffer {
  return createHash('sha256').update(token).digest();
}
