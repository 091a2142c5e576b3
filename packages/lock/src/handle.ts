// A held lock: fencing token, re-entry count, release/extend, and a `signal` that aborts with
// LockLostError as soon as the hold is known or presumed lost (monotonic clock).
import { performance } from 'node:perf_hooks';
import { LockLostError } from './errors.ts';
import { type LockPipeline, renewInput, renewScript } from './scripts.ts';

export interface HandleOwner {
  releaseHandle(handle: LockHandle): Promise<void>;
  extendHandle(handle: LockHandle, leaseMs: number): Promise<void>;
  remainingTtl(handle: LockHandle): Promise<number>;
  /** Queues this kind's renew script for the watchdog (default: the reentrant lock's renew). */
  queueRenewal?(pipeline: LockPipeline, handle: LockHandle, leaseMs: number): void;
}

/**
 * One hold of a lock, returned by acquire/tryAcquire of every lock kind. `token` is the fencing token to
 * pass to the protected resource; `signal` aborts with LockLostError when the hold is lost (renewal found
 * the lock gone, or the lease ran out before Redis confirmed it again, measured on the monotonic clock
 * from when the confirming command was sent). Usable with `await using`.
 */
export class LockHandle implements AsyncDisposable {
  private confirmedUntil: number;
  private controller: AbortController | undefined;
  private expiryTimer: NodeJS.Timeout | undefined;
  private lostError: LockLostError | undefined;
  private releasedFlag = false;

  constructor(
    private readonly client: HandleOwner,
    readonly name: string,
    readonly owner: string,
    /** Fencing token: strictly increasing per lock name across every acquisition. */
    readonly token: number,
    /** Re-entry count of this owner right after this acquisition. */
    readonly holdCount: number,
    /** The lease in force; with the watchdog it is renewed every leaseMs/3. */
    public leaseMs: number,
    readonly watchdog: boolean,
    sentAt: number,
    /** What kind of hold this is ('lock': a reentrant or fair lock hash field; 'read'/'write'; ...). */
    readonly kind: string = 'lock',
  ) {
    this.confirmedUntil = sentAt + leaseMs;
  }

  /** Milliseconds this hold is known to stay valid (0 once lost or released), by the monotonic clock. */
  get validForMs(): number {
    if (this.releasedFlag || this.lost) return 0;
    return Math.max(0, this.confirmedUntil - performance.now());
  }

  /** Aborts with LockLostError when the lock is lost; never fires after release(). */
  get signal(): AbortSignal {
    if (!this.controller) {
      this.controller = new AbortController();
      if (this.lostError) this.controller.abort(this.lostError);
      else if (!this.releasedFlag) this.armExpiry();
    }
    return this.controller.signal;
  }

  get released(): boolean {
    return this.releasedFlag;
  }

  get lost(): LockLostError | undefined {
    if (!this.lostError && !this.releasedFlag && performance.now() >= this.confirmedUntil) {
      this.markLost('lease expired before it was renewed');
    }
    return this.lostError;
  }

  /** Releases this hold (re-entry counted down); calling it again is a no-op. */
  release(): Promise<void> {
    if (this.releasedFlag) return Promise.resolve();
    this.releasedFlag = true;
    clearTimeout(this.expiryTimer);
    return this.client.releaseHandle(this);
  }

  /** Sets the lease to leaseMs from now (default: the current lease); LockNotHeldError if lost. */
  extend(leaseMs = this.leaseMs): Promise<void> {
    return this.client.extendHandle(this, leaseMs);
  }

  /** Milliseconds left on the lock's lease in Redis, 0 when this owner no longer holds it. */
  remainingTtl(): Promise<number> {
    return this.client.remainingTtl(this);
  }

  async [Symbol.asyncDispose](): Promise<void> {
    await this.release();
  }

  /** @internal Redis confirmed the hold with a command sent at `sentAt`. */
  confirm(sentAt: number, leaseMs: number): void {
    if (this.releasedFlag || this.lostError) return;
    this.leaseMs = leaseMs;
    this.confirmedUntil = Math.max(this.confirmedUntil, sentAt + leaseMs);
    if (this.controller) this.armExpiry();
  }

  /** @internal Queues the renew command for this hold on a watchdog pipeline. */
  queueRenewal(pipeline: LockPipeline, leaseMs: number): void {
    if (this.client.queueRenewal) this.client.queueRenewal(pipeline, this, leaseMs);
    else renewScript.run(pipeline, renewInput(this.name, this.owner, leaseMs));
  }

  /** @internal */
  expiredAt(now: number): boolean {
    return now >= this.confirmedUntil;
  }

  /** @internal */
  markLost(reason: string): void {
    if (this.releasedFlag || this.lostError) return;
    this.lostError = new LockLostError(this.name, reason);
    clearTimeout(this.expiryTimer);
    this.controller?.abort(this.lostError);
  }

  private armExpiry(): void {
    clearTimeout(this.expiryTimer);
    const delay = Math.max(0, this.confirmedUntil - performance.now());
    this.expiryTimer = setTimeout(() => this.markLost('lease expired before it was renewed'), delay);
    this.expiryTimer.unref();
  }
}
