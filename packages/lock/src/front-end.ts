// The one lock front-end every lock kind and backend shares: acquire (wait, abort), tryAcquire, withLock,
// the owner of the current async chain (re-entry), lease checks; a backend supplies obtain() and handles.
import { performance } from 'node:perf_hooks';
import { LockAcquireTimeoutError } from './errors.ts';
import type { LockHandle } from './handle.ts';
import { currentOwner, newOwnerId, withOwner } from './owner.ts';

/** Options of one acquisition (acquire, tryAcquire, withLock), the same for every lock kind and backend. */
export interface AcquireOptions {
  /** How long to wait for the lock (monotonic ms). acquire(): forever by default; tryAcquire(): 0. */
  waitMs?: number;
  /**
   * Explicit lease: the lock expires after it. Without it the lock is kept alive while held (the
   * watchdog on Redis, the client's lease or session on etcd and ZooKeeper).
   */
  leaseMs?: number;
  /** Aborts the wait; the promise rejects with the signal's reason and nothing is left behind. */
  signal?: AbortSignal;
  /** Owner id to hold the lock as (default: the current async chain's owner, or a new one). */
  owner?: string;
}

/**
 * What a lock observed, reported to its `onEvent` option (the service's lock metrics). Times are
 * monotonic milliseconds as this client sees them:
 * - acquired: from the call until the client knew it held the lock (the acquiring round trip
 *   included); handoff when the lock came to this waiter from the previous holder's release (Redis:
 *   handed to it directly; etcd and ZooKeeper: its predecessor's key or node deleted).
 * - timeout: the wait ran out (or a zero-wait try found the lock held).
 * - released: from acquisition until the release's reply. For runGuarded's one-round-trip path
 *   (acquire, commands, release pipelined) that is the round trip: an upper bound on the hold.
 */
export type LockEvent =
  | { type: 'acquired'; name: string; waitMs: number; handoff: boolean }
  | { type: 'timeout'; name: string; waitMs: number }
  | { type: 'released'; name: string; heldMs: number };

/** The observer of a lock's events. Called synchronously; whatever it throws is ignored. */
export type LockEventObserver = (event: LockEvent) => void;

/** What a backend is asked for: one acquisition, with its owner and lease decided by the front-end. */
export interface ObtainRequest {
  name: string;
  owner: string;
  /** Positive integer ms. */
  leaseMs: number;
  /** True when no explicit lease was given: keep the hold alive while held. */
  keepAlive: boolean;
  /** Monotonic ms to wait; 0: a single try that never queues. */
  waitMs: number;
  signal?: AbortSignal | undefined;
}

/** Throws RangeError unless ms is a positive integer (what every backend's lease takes). */
export function checkLease(ms: number): void {
  // PEXPIRE takes integer ms; a fraction or Infinity would fail after the lock hash was written.
  if (!Number.isInteger(ms) || ms <= 0)
    throw new RangeError(`lease must be a positive integer of ms, got ${ms}`);
}

/**
 * Base of every lock: the acquire forms and owner identity, written once. A backend implements
 * `obtain` (try once, or wait in its own way: hand-off, watch of the predecessor...) and the handle's
 * primitives (release, extend, remaining TTL) as the HandleOwner of the handles it creates.
 *
 * The owner is the current async call chain by default (Redisson uses the thread), so a nested
 * `withLock` in the holder's chain re-enters while a parallel request waits.
 */
export abstract class LockFrontEnd {
  /** When each live handle was acquired (for the hold time reported at release); only with onEvent. */
  private readonly acquiredAt = new WeakMap<LockHandle, number>();

  constructor(
    /** Identifies this client in owner ids (`<clientId>:<n>`). */
    readonly clientId: string,
    /** Lease of an acquisition without `leaseMs`, kept alive while held. */
    protected readonly defaultLeaseMs: number,
    /** Observes waits, hand-offs and holds; an observer can never change what the lock does. */
    protected readonly onEvent?: LockEventObserver,
  ) {}

  /** Waits for the lock (forever unless waitMs); throws LockAcquireTimeoutError when waitMs runs out. */
  async acquire(name: string, options: AcquireOptions = {}): Promise<LockHandle> {
    const waitMs = options.waitMs ?? Number.POSITIVE_INFINITY;
    const handle = await this.tryAcquire(name, { ...options, waitMs });
    if (!handle) throw new LockAcquireTimeoutError(name, waitMs);
    return handle;
  }

  /** Like acquire, but resolves to null when the lock is not had within waitMs (default 0: one try). */
  async tryAcquire(name: string, options: AcquireOptions = {}): Promise<LockHandle | null> {
    const owner = this.ownerFor(options);
    const leaseMs = options.leaseMs ?? this.defaultLeaseMs;
    checkLease(leaseMs);
    return this.obtain({
      name,
      owner,
      leaseMs,
      keepAlive: options.leaseMs === undefined,
      waitMs: options.waitMs ?? 0,
      signal: options.signal,
    });
  }

  /** Runs fn while holding the lock, as the lock's owner (nested withLock in fn re-enters); always releases. */
  async withLock<T>(
    name: string,
    options: AcquireOptions,
    fn: (handle: LockHandle) => Promise<T> | T,
  ): Promise<T> {
    const owner = this.ownerFor(options);
    return withOwner(this.clientId, owner, async () => {
      const handle = await this.acquire(name, { ...options, owner });
      try {
        return await fn(handle);
      } finally {
        await handle.release();
      }
    });
  }

  /** The backend's acquisition: null when the lock was not had within request.waitMs. */
  protected abstract obtain(request: ObtainRequest): Promise<LockHandle | null>;

  /** Reports an event to onEvent, ignoring whatever the observer throws. */
  protected emit(event: LockEvent): void {
    if (!this.onEvent) return;
    try {
      this.onEvent(event);
    } catch {
      // An observer's failure must not change what the lock does.
    }
  }

  /** Reports how an acquisition begun at `startedAt` ended (acquired, or timed out) and notes the hold. */
  protected reportObtain(name: string, startedAt: number, handle: LockHandle | null, handoff: boolean): void {
    if (!this.onEvent) return;
    const waitMs = performance.now() - startedAt;
    if (!handle) {
      this.emit({ type: 'timeout', name, waitMs });
      return;
    }
    this.emit({ type: 'acquired', name, waitMs, handoff });
    this.trackHold(handle);
  }

  /** Notes when a handle was acquired, for the 'released' event of its release. */
  protected trackHold(handle: LockHandle): void {
    if (this.onEvent) this.acquiredAt.set(handle, performance.now());
  }

  /** Reports the release of a handle trackHold noted (once). */
  protected reportRelease(handle: LockHandle): void {
    const acquiredAt = this.acquiredAt.get(handle);
    if (acquiredAt === undefined) return;
    this.acquiredAt.delete(handle);
    this.emit({ type: 'released', name: handle.name, heldMs: performance.now() - acquiredAt });
  }

  /** The owner an acquisition holds the lock as: explicit, the current chain's, or a new one. */
  protected ownerFor(options: AcquireOptions): string {
    return options.owner ?? currentOwner(this.clientId) ?? newOwnerId(this.clientId);
  }
}
