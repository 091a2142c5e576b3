// The hold core every lock kind extends: the handle side written once (release: stop renewing, the
// kind's release, the event; extend: refused once released or lost, a lost hold marked), error wrapping.
import { performance } from 'node:perf_hooks';
import { isConnectionError } from './coded-error.ts';
import { LockNotHeldError, LockUnavailableError } from './errors.ts';
import { checkLease, LockFrontEnd } from './front-end.ts';
import type { HandleOwner, LockHandle } from './handle.ts';
import type { Watchdog } from './watchdog.ts';

/** What a kind's extend answers: the hold confirmed for leaseMs from a monotonic time, or no longer held. */
export type Extended = { from: number; leaseMs: number } | 'not_held';

/**
 * Base of every lock kind (shaped like redis-semaphore's abstract Lock): the front-end's acquire forms,
 * plus the handle primitives' common part. A kind supplies `obtain` (front-end), `releaseHold`,
 * `extendHold`, `remainingTtl`, and the watchdog that renews its holds in batches.
 */
export abstract class HoldCore extends LockFrontEnd implements HandleOwner {
  /** Renews this kind's holds without an explicit lease, in one batch per period. */
  protected abstract readonly watchdog: Watchdog;
  /** The lock service, as LockUnavailableError names it. */
  protected readonly serviceName: string = 'Redis';

  /** The kind's release of one hold on its servers; LockNotHeldError when it no longer held it. */
  protected abstract releaseHold(handle: LockHandle): Promise<void>;
  /** The kind's renewal of one hold to `leaseMs`. */
  protected abstract extendHold(handle: LockHandle, leaseMs: number): Promise<Extended>;
  /** Milliseconds left on the hold's lease on the servers, 0 when it is no longer held. */
  abstract remainingTtl(handle: LockHandle): Promise<number>;

  /** Releases a hold: renewal stopped first (no renewal can race the release), then the 'released' event. */
  async releaseHandle(handle: LockHandle): Promise<void> {
    this.stopRenewing(handle);
    await this.releaseHold(handle);
    this.reportRelease(handle);
  }

  /** Sets the hold's lease to `leaseMs` from now; LockNotHeldError once released, lost, or gone. */
  async extendHandle(handle: LockHandle, leaseMs: number): Promise<void> {
    checkLease(leaseMs);
    if (handle.released || handle.lost) throw new LockNotHeldError(handle.name);
    const extended = await this.extendHold(handle, leaseMs);
    if (extended === 'not_held') {
      this.loseHold(handle, 'lock no longer held at extend');
      throw new LockNotHeldError(handle.name);
    }
    handle.confirm(extended.from, extended.leaseMs);
  }

  /** Stops keeping a hold alive (before its release). */
  protected stopRenewing(handle: LockHandle): void {
    if (handle.watchdog) this.watchdog.remove(handle);
  }

  /** A hold found gone: its signal aborts (kinds that keep more state per hold drop it too). */
  protected loseHold(handle: LockHandle, reason: string): void {
    this.stopRenewing(handle);
    handle.markLost(reason);
  }

  /** The hold confirmed from when `renew` was sent, or not_held when it answered false. */
  protected async renewedBy(
    handle: LockHandle,
    leaseMs: number,
    renew: () => Promise<boolean>,
  ): Promise<Extended> {
    const sentAt = performance.now();
    return (await this.call(handle.name, renew)) ? { from: sentAt, leaseMs } : 'not_held';
  }

  /** Whether an error means the lock service could not be reached (default: a lost connection). */
  protected isUnavailable(err: unknown): boolean {
    return isConnectionError(err);
  }

  /** Runs a request to the lock service, turning "could not reach it" into LockUnavailableError. */
  protected async call<T>(name: string, op: () => Promise<T>): Promise<T> {
    try {
      return await op();
    } catch (err) {
      if (this.isUnavailable(err)) throw new LockUnavailableError(name, err, this.serviceName);
      throw err;
    }
  }
}
