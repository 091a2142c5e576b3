// The queued lock kinds' common part (fair, read-write): acquire, tryAcquire, withLock and handles on a
// LockClient's connection, subscriber and watchdog; each kind supplies its scripts.
import { performance } from 'node:perf_hooks';
import type { LockClient } from './client.ts';
import type { LockCore } from './core.ts';
import { LockNotHeldError } from './errors.ts';
import { FAMILY_SCRIPTS, type QueuedAcquire, type QueuedRelease } from './family-scripts.ts';
import { type AcquireOptions, LockFrontEnd, type ObtainRequest } from './front-end.ts';
import { type HandleOwner, LockHandle } from './handle.ts';
import { defineScripts } from './lua.ts';
import type { RedisClient } from './redis-client.ts';
import { type QueuedReply, Refusal, type ReleaseCode, refusalError, released } from './replies.ts';
import type { LockPipeline } from './scripts.ts';
import { ELIGIBLE_CAP_MS, RETRY_CAP_MS, type TurnReply, waitTurn, withDeadline } from './waiting.ts';

/** Options of one acquisition of a fair or read-write lock: those of every lock. With waitMs 0 (the
 * default of tryAcquire) it takes the lock only if nobody holds it and nobody is queued: it never barges. */
export type QueuedAcquireOptions = AcquireOptions;

/** Options of a fair or read-write lock (both optional). */
export interface QueuedLockOptions {
  /**
   * Longest a queued waiter sleeps before asking again (default 5 s). Each ask renews its place; a
   * waiter that stops asking is dropped at its deadline.
   */
  heartbeatMs?: number;
  /** Longest deadline a waiter is given per ask (default 15 s; its remaining wait when shorter). */
  eligibleCapMs?: number;
}

/** A grant whose known remaining time is below this is topped up before acquire returns. */
const MIN_LAZY_TOP_UP_MS = 200;

interface Granted {
  token: number;
  holdCount: number;
  grantedMs: number;
  /** When the attempt that led to the grant was sent (the grant began no earlier). */
  sentAt: number;
}

/**
 * Base of the queued lock kinds. A release grants the lock straight to the oldest live waiter. The grant
 * lasts the waiter's lease cut to its queue deadline (+ a small grace), so a waiter that died while
 * queued holds the lock no longer than it would have waited; a live waiter whose grant is shorter than
 * its lease tops it up (half-way through the grant when that is far enough, at once otherwise).
 */
export abstract class QueuedLock extends LockFrontEnd implements HandleOwner {
  protected readonly core: LockCore;
  protected readonly redis: RedisClient;
  private readonly heartbeatMs: number;
  private readonly eligibleCapMs: number;

  constructor(client: LockClient, options: QueuedLockOptions = {}) {
    super(client.core.clientId, client.core.watchdogLeaseMs, client.core.onEvent);
    this.core = client.core;
    this.redis = this.core.redis;
    defineScripts(this.redis, FAMILY_SCRIPTS);
    this.heartbeatMs = options.heartbeatMs ?? RETRY_CAP_MS;
    this.eligibleCapMs = options.eligibleCapMs ?? ELIGIBLE_CAP_MS;
    if (!(this.heartbeatMs > 0) || !(this.eligibleCapMs > this.heartbeatMs)) {
      throw new RangeError('need 0 < heartbeatMs < eligibleCapMs');
    }
  }

  /** The kind of hold, as LockHandle.kind ('lock' for the fair lock: renewed like the reentrant one). */
  protected abstract readonly holdKind: string;
  protected abstract acquireOnce(request: QueuedAcquire): Promise<QueuedReply>;
  /** null when the owner did not hold the lock, 0 when holds remain, 1 when released. */
  protected abstract releaseOnce(request: QueuedRelease): Promise<ReleaseCode | null>;
  /** Whether the owner's hold was renewed to leaseMs from now (false: it is gone). */
  protected abstract renewOnce(name: string, owner: string, leaseMs: number): Promise<boolean>;
  abstract queueRenewal(pipeline: LockPipeline, handle: LockHandle, leaseMs: number): void;
  abstract remainingTtl(handle: LockHandle): Promise<number>;

  /**
   * One acquisition: an attempt, then (with waitMs) queued in Redis until granted. With waitMs 0 it
   * takes the lock only if nobody holds it and nobody is queued for it: it never barges.
   */
  protected async obtain(request: ObtainRequest): Promise<LockHandle | null> {
    const { name, owner, leaseMs, keepAlive: watchdog } = request;
    const started = performance.now();
    let sentAt = 0;
    let handoff = false;
    const handle = await waitTurn<LockHandle>({
      waitMs: request.waitMs,
      signal: request.signal,
      eligibleCapMs: this.eligibleCapMs,
      retryCapMs: this.heartbeatMs,
      attempt: async (mode, eligibleMs): Promise<TurnReply<LockHandle>> => {
        sentAt = performance.now();
        const { clientId } = this.core;
        const heartbeatMs = this.heartbeatMs;
        const reply = await this.core.call(name, () =>
          this.acquireOnce({ name, owner, leaseMs, mode, clientId, eligibleMs, heartbeatMs }),
        );
        if (reply.acquired) {
          const handle = await this.claim(name, owner, leaseMs, watchdog, { ...reply, sentAt });
          return handle ? { acquired: true, value: handle } : { acquired: false, retryInMs: 1 };
        }
        if ('refused' in reply) throw refusalError(name, reply.refused);
        return { acquired: false, retryInMs: Math.max(reply.wakeInMs, 1) };
      },
      open: async (deadline) => {
        const { hub } = this.core;
        await this.core.call(name, () => withDeadline(hub.start(), deadline - performance.now()));
        const waiter = hub.register(name, owner);
        return {
          next: (ms, signal) => waiter.next(ms, signal),
          clearHandoff: () => waiter.clearHandoff(),
          close: () => hub.unregister(waiter),
        };
      },
      handedOff: (event) => {
        handoff = true;
        return this.claim(name, owner, leaseMs, watchdog, {
          token: event.token,
          holdCount: 1,
          grantedMs: event.grantedMs ?? leaseMs,
          sentAt,
        });
      },
      withdraw: async () => {
        try {
          const requestId = this.core.nextRequestId();
          await this.releaseOnce({ name, owner, leaseMs, mode: 'cancel', requestId });
        } catch {
          // Redis unreachable: the queue entry lapses at its deadline, a grant at its end.
        }
      },
    });
    this.reportObtain(name, started, handle, handoff);
    return handle;
  }

  // --- HandleOwner ---

  async releaseHandle(handle: LockHandle): Promise<void> {
    if (handle.watchdog) this.core.watchdog.remove(handle);
    const { name, owner, leaseMs } = handle;
    const requestId = this.core.nextRequestId();
    const reply = await this.core.call(name, () =>
      this.releaseOnce({ name, owner, leaseMs, mode: 'release', requestId }),
    );
    released(name, reply);
    this.reportRelease(handle);
  }

  async extendHandle(handle: LockHandle, leaseMs: number): Promise<void> {
    if (handle.released) throw new LockNotHeldError(handle.name);
    const sentAt = performance.now();
    const renewed = await this.core.call(handle.name, () =>
      this.renewOnce(handle.name, handle.owner, leaseMs),
    );
    if (!renewed) {
      handle.markLost('lock no longer held at extend');
      throw refusalError(handle.name, Refusal.NotHeld);
    }
    handle.confirm(sentAt, leaseMs);
  }

  // --- internals ---

  /**
   * Turns an acquisition into a handle. A grant shorter than the lease is topped up to the lease: in
   * the background when what we know of it leaves time, else now (null if it lapsed meanwhile).
   */
  private async claim(
    name: string,
    owner: string,
    leaseMs: number,
    watchdog: boolean,
    got: Granted,
  ): Promise<LockHandle | null> {
    if (got.grantedMs >= leaseMs) return this.newHandle(name, owner, leaseMs, watchdog, got, got.sentAt);
    // The grant began after our attempt was sent, so it lasts at least until sentAt + grantedMs.
    const knownLeft = got.sentAt + got.grantedMs - performance.now();
    if (knownLeft >= MIN_LAZY_TOP_UP_MS) {
      const handle = this.newHandle(
        name,
        owner,
        leaseMs,
        watchdog,
        got,
        got.sentAt + got.grantedMs - leaseMs,
      );
      const timer = setTimeout(() => {
        if (!handle.released && !handle.lost) this.extendHandle(handle, leaseMs).catch(() => {});
      }, knownLeft / 2);
      timer.unref();
      return handle;
    }
    const sentAt = performance.now();
    if (!(await this.core.call(name, () => this.renewOnce(name, owner, leaseMs)))) return null;
    return this.newHandle(name, owner, leaseMs, watchdog, got, sentAt);
  }

  private newHandle(
    name: string,
    owner: string,
    leaseMs: number,
    watchdog: boolean,
    got: Granted,
    leaseFrom: number,
  ): LockHandle {
    const handle = new LockHandle(
      this,
      name,
      owner,
      got.token,
      got.holdCount,
      leaseMs,
      watchdog,
      leaseFrom,
      this.holdKind,
    );
    if (watchdog) this.core.watchdog.add(handle);
    return handle;
  }
}
