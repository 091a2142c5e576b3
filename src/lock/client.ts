// The reentrant lock client: Redisson's lock layout plus fencing tokens, a per-client watchdog, and
// waiting without polling (a release hands the lock to one queued waiter and tells only its process).
import { performance } from 'node:perf_hooks';
import { isConnectionError } from './coded-error.ts';
import type { LockCore } from './core.ts';
import { LockAcquireTimeoutError, LockNotHeldError, LockUnavailableError } from './errors.ts';
import {
  type AcquireOptions,
  checkLease,
  type LockEventObserver,
  LockFrontEnd,
  type ObtainRequest,
} from './front-end.ts';
import { type HandleOwner, LockHandle } from './handle.ts';
import { lockKeys } from './keys.ts';
import { defineScripts } from './lua.ts';
import { currentOwner, newClientId } from './owner.ts';
import { isCluster, type RedisClient } from './redis-client.ts';
import {
  type AcquireReply,
  type AcquireRequest,
  acquireInput,
  acquireScript,
  LOCK_SCRIPTS,
  type LockPipeline,
  releaseInput,
  releaseScript,
  renewInput,
  renewScript,
} from './scripts.ts';
import { waitTurn, withDeadline } from './waiting.ts';
import { WakeHub } from './wake-hub.ts';
import { Watchdog } from './watchdog.ts';

export type { AcquireOptions, LockEvent } from './front-end.ts';

/** Options of a LockClient; every one is optional. */
export interface LockClientOptions {
  /** Readable prefix of this client's id `<clientId>-<uuid>` (owner ids `<id>:<n>`): never shared. */
  clientId?: string;
  /** Lease kept alive by the watchdog when acquire() is given no leaseMs (Redisson: 30 s). */
  watchdogLeaseMs?: number;
  /** Connection for pub/sub; by default a duplicate of the command connection. */
  subscriber?: RedisClient;
  /**
   * Observes waits, hand-offs and holds (metrics). Called synchronously; whatever it throws is
   * ignored, so an observer can never change what the lock does.
   */
  onEvent?: LockEventObserver;
}

/** Options of runGuarded: an explicit lease is required (the hold is not renewed). */
export interface GuardedOptions extends AcquireOptions {
  leaseMs: number;
  /**
   * Whether the guarded commands' replies show their work done even though the acquire sent with
   * them failed. An idempotent script can answer so when ioredis re-sent a pipeline whose reply was
   * lost: the first send did the work under the lock, the re-sent acquire found the lock taken by
   * someone else since. Then runGuarded returns those replies instead of waiting for the lock.
   */
  settled?: (replies: unknown[]) => boolean;
}

/** Thrown inside a guarded call's wait to end it when `settled` says the work is done. */
const SETTLED_WITHOUT_HOLD = Symbol('settled without hold');

/** What a guarded command sees: who holds the lock and, once known, the fencing token of the hold. */
export interface Hold {
  owner: string;
  /** null in the first, optimistic round trip: the guarded script reads the token from RedisClient. */
  token: number | null;
}

/** A successful acquire: viaAttempt 0 means the lock was handed to wait `waitId` by a release. */
interface Obtained {
  token: number;
  holdCount: number;
  viaAttempt: number;
  waitId: string;
}

/**
 * Reentrant distributed locks on one Redis, compatible with Redisson's `getLock(name)` (same hash layout,
 * same unlock channel): a Java service and this client exclude each other on the same name.
 *
 * Each acquisition gets a fencing token, strictly increasing per lock name. By default the owner is the
 * current async call chain, so a nested `withLock` in the holder's chain re-enters. Without `leaseMs`
 * a watchdog renews the lock every `watchdogLeaseMs / 3` while it is held. A waiter is queued in Redis
 * and the release hands the lock straight to the oldest live waiter, telling only that waiter's client.
 *
 * @example
 * const locks = new LockClient(new Redis());
 * await locks.withLock('orders:42', { waitMs: 1000 }, async (hold) => {
 *   await writeWithFence(hold.token); // hold.signal aborts if the lock is lost
 * });
 * await locks.close();
 */
export class LockClient extends LockFrontEnd implements HandleOwner {
  readonly watchdogLeaseMs: number;
  private readonly redis: RedisClient;
  private readonly hub: WakeHub;
  private readonly watchdog: Watchdog;
  /** Holds that came by hand-off, with the wait they were handed to (its marker goes at release). */
  private readonly handedTo = new WeakMap<LockHandle, string>();
  private requestSeq = 0;
  private coreView: LockCore | undefined;
  /** On a Redis Cluster releases send the unlock notice with SPUBLISH, as Redisson 3.22+ expects. */
  private readonly sharded: boolean;

  constructor(redis: RedisClient, options: LockClientOptions = {}) {
    super(newClientId(options.clientId), options.watchdogLeaseMs ?? 30_000, options.onEvent);
    this.watchdogLeaseMs = this.defaultLeaseMs;
    checkLease(this.watchdogLeaseMs);
    this.redis = redis;
    this.sharded = isCluster(redis);
    defineScripts(redis, LOCK_SCRIPTS);
    this.hub = new WakeHub(redis, this.clientId, options.subscriber);
    this.watchdog = new Watchdog(this.redis, this.watchdogLeaseMs);
  }

  /** One acquisition: an attempt, then (with waitMs) queued in Redis until handed the lock. */
  protected async obtain(request: ObtainRequest): Promise<LockHandle | null> {
    const { name, owner, leaseMs } = request;
    let sentAt = 0;
    const got = await this.waitFor(name, owner, leaseMs, request, (req) => {
      sentAt = performance.now();
      return this.call(name, () => acquireScript.run(this.redis, acquireInput(req)));
    });
    if (!got) return null;
    // For a hand-off the lease began when the releaser ran, which is after our last attempt was sent:
    // counting from that send time can only make us think the lease ends sooner than it does.
    return this.newHandle(name, owner, got, leaseMs, request.keepAlive, sentAt);
  }

  /**
   * Acquire, caller's commands, release — in one pipelined round trip when the lock is free. The
   * commands `build` queues run whether or not the acquire succeeded, so they must check ownership
   * themselves (as the stock decrement does). When the lock is held, waits for the hand-off and
   * runs them again with the fencing token. Resolves to the replies of the caller's commands;
   * LockAcquireTimeoutError when `waitMs` (default 0) runs out.
   *
   * A pipeline ioredis re-sends after a lost reply is safe: the re-sent acquire sees that its paired
   * release already ran and takes nothing, and the re-sent release is answered from its latch.
   *
   * @example
   * const [reply] = await locks.runGuarded('stock:7', { leaseMs: 2000, waitMs: 500 }, (p, hold) => {
   *   decrementScript.run(p, { lock: 'stock:7', owner: hold.owner, token: hold.token ?? '' });
   * });
   */
  async runGuarded(
    name: string,
    options: GuardedOptions,
    build: (pipeline: LockPipeline, hold: Hold) => void,
  ): Promise<unknown[]> {
    const owner = this.ownerFor(options);
    let firstReplies: unknown[] | undefined;
    let firstSentAt = 0;
    const got = await this.waitFor(name, owner, options.leaseMs, options, async (req) => {
      if (firstReplies !== undefined) {
        return this.call(name, () => acquireScript.run(this.redis, acquireInput(req)));
      }
      firstSentAt = performance.now();
      const replies = await this.execPipeline(
        name,
        owner,
        options.leaseMs,
        { owner, token: null },
        build,
        req,
      );
      firstReplies = replies.slice(1, -1);
      const reply = acquireScript.parse(replies[0]);
      // Ends the wait (withdrawing from the queue) rather than returning: there is nothing to wait for.
      if (!reply.acquired && options.settled?.(firstReplies)) throw SETTLED_WITHOUT_HOLD;
      return reply;
    }).catch((err: unknown) => {
      if (err === SETTLED_WITHOUT_HOLD) return SETTLED_WITHOUT_HOLD;
      throw err;
    });
    if (typeof got === 'symbol') return firstReplies as unknown[];
    if (!got) throw new LockAcquireTimeoutError(name, options.waitMs ?? 0);
    if (got.viaAttempt === 1 && firstReplies) {
      this.emit({ type: 'released', name, heldMs: performance.now() - firstSentAt });
      return firstReplies;
    }
    const heldFrom = performance.now();
    const hold = { owner, token: got.token };
    const handedTo = got.viaAttempt === 0 ? got.waitId : '';
    const replies = await this.execPipeline(name, owner, options.leaseMs, hold, build, undefined, handedTo);
    this.emit({ type: 'released', name, heldMs: performance.now() - heldFrom });
    return replies.slice(0, -1);
  }

  /** Deletes the lock whoever holds it (and hands it to the next queued waiter). */
  async forceUnlock(name: string): Promise<boolean> {
    const requestId = this.nextRequestId();
    const reply = await this.call(name, () =>
      releaseScript.run(
        this.redis,
        releaseInput({ name, owner: '', leaseMs: 0, mode: 'force', requestId, sharded: this.sharded }),
      ),
    );
    return reply === 1;
  }

  /**
   * The Redis key of the lock's fencing-token counter: a script that decides in the same atomic run
   * as the acquire (see runGuarded) reads the hold's token from it.
   */
  tokenCounterKey(name: string): string {
    return lockKeys(name).token;
  }

  async isLocked(name: string): Promise<boolean> {
    return (await this.call(name, () => this.redis.exists(name))) === 1;
  }

  /** Re-entry count of the owner (default: the current chain's owner) on this lock; 0 if not held. */
  async holdCount(name: string, owner = currentOwner(this.clientId)): Promise<number> {
    if (!owner) return 0;
    const v = await this.call(name, () => this.redis.hget(name, owner));
    return v === null ? 0 : Number(v);
  }

  /** @internal What the other lock kinds (fair, read-write) built on this client share with it. */
  get core(): LockCore {
    this.coreView ??= {
      clientId: this.clientId,
      watchdogLeaseMs: this.watchdogLeaseMs,
      redis: this.redis,
      hub: this.hub,
      watchdog: this.watchdog,
      call: (name, op) => this.call(name, op),
      nextRequestId: () => this.nextRequestId(),
    };
    return this.coreView;
  }

  /** Stops the watchdog and the subscriber; held locks then expire with their lease. */
  async close(): Promise<void> {
    this.watchdog.stop();
    await this.hub.close();
  }

  // --- HandleOwner ---

  async releaseHandle(handle: LockHandle): Promise<void> {
    if (handle.watchdog) this.watchdog.remove(handle);
    const request = {
      name: handle.name,
      owner: handle.owner,
      leaseMs: handle.leaseMs,
      mode: 'release' as const,
      requestId: this.nextRequestId(),
      waitId: this.handedTo.get(handle),
    };
    const reply = await this.call(handle.name, () =>
      releaseScript.run(this.redis, releaseInput({ ...request, sharded: this.sharded })),
    );
    if (reply === null) throw new LockNotHeldError(handle.name);
    this.reportRelease(handle);
  }

  async extendHandle(handle: LockHandle, leaseMs: number): Promise<void> {
    checkLease(leaseMs);
    if (handle.released) throw new LockNotHeldError(handle.name);
    const sentAt = performance.now();
    const renewed = await this.call(handle.name, () =>
      renewScript.run(this.redis, renewInput(handle.name, handle.owner, leaseMs)),
    );
    if (!renewed) {
      handle.markLost('lock no longer held at extend');
      throw new LockNotHeldError(handle.name);
    }
    handle.confirm(sentAt, leaseMs);
  }

  async remainingTtl(handle: LockHandle): Promise<number> {
    const replies = await this.call(handle.name, () =>
      this.redis.pipeline().hexists(handle.name, handle.owner).pttl(handle.name).exec(),
    );
    const [held, pttl] = (replies ?? []).map(([, v]) => Number(v));
    return held === 1 && pttl !== undefined && pttl > 0 ? pttl : 0;
  }

  // --- internals ---

  private nextRequestId(): string {
    this.requestSeq += 1;
    return `${this.clientId}:${this.requestSeq}`;
  }

  private newHandle(
    name: string,
    owner: string,
    got: Obtained,
    leaseMs: number,
    watchdog: boolean,
    sentAt: number,
  ): LockHandle {
    const handle = new LockHandle(this, name, owner, got.token, got.holdCount, leaseMs, watchdog, sentAt);
    if (got.viaAttempt === 0) this.handedTo.set(handle, got.waitId);
    if (watchdog) this.watchdog.add(handle);
    this.trackHold(handle);
    return handle;
  }

  /** waitInQueue(), reporting the wait (acquired, handed off, or timed out) to onEvent. */
  private async waitFor(
    name: string,
    owner: string,
    leaseMs: number,
    options: Pick<AcquireOptions, 'waitMs' | 'signal'>,
    attempt: (req: AcquireRequest) => Promise<AcquireReply>,
  ): Promise<Obtained | null> {
    if (!this.onEvent) return this.waitInQueue(name, owner, leaseMs, options, attempt);
    const started = performance.now();
    const got = await this.waitInQueue(name, owner, leaseMs, options, attempt);
    const waitMs = performance.now() - started;
    this.emit(
      got
        ? { type: 'acquired', name, waitMs, handoff: got.viaAttempt === 0 }
        : { type: 'timeout', name, waitMs },
    );
    return got;
  }

  /**
   * The waiting loop shared by every acquire form. `attempt` performs one acquire in the given mode;
   * between attempts we sleep until a hand-off, a foreign release or the holder's PTTL, whichever
   * first. On timeout or abort the queue entry is withdrawn (and a lock handed to us meanwhile is
   * passed on) before the promise settles.
   */
  private async waitInQueue(
    name: string,
    owner: string,
    leaseMs: number,
    options: Pick<AcquireOptions, 'waitMs' | 'signal'>,
    attempt: (req: AcquireRequest) => Promise<AcquireReply>,
  ): Promise<Obtained | null> {
    checkLease(leaseMs);
    // Each wait has its own id: two waits of one owner (re-entrant chains) never stand for each other.
    const waitId = `${this.nextRequestId()}:w`;
    const base = { name, owner, leaseMs, clientId: this.clientId, waitId };
    let attempts = 0;
    return waitTurn({
      waitMs: options.waitMs ?? 0,
      signal: options.signal,
      attempt: async (mode, eligibleMs) => {
        const reply = await attempt({ ...base, mode, eligibleMs });
        attempts += 1;
        if (reply.acquired) return { acquired: true, value: { ...reply, viaAttempt: attempts, waitId } };
        return {
          acquired: false,
          // PTTL -1: a lock without a TTL can only end by a release, so wait for its message (up to
          // the heartbeat), not a timer; 0 or -2: it is lapsing right now, so ask again at once.
          retryInMs: reply.pttl === -1 ? Number.POSITIVE_INFINITY : Math.max(reply.pttl, 1),
          handOffExpected: reply.handOffExpected,
        };
      },
      open: async (deadline) => {
        if (!this.hub.started) {
          await this.call(name, () => withDeadline(this.hub.start(), deadline - performance.now()));
        }
        const waiter = this.hub.register(name, waitId);
        return {
          next: (ms, signal) => waiter.next(ms, signal),
          listen: () => this.hub.watchForeign(name),
          close: () => this.hub.unregister(waiter),
        };
      },
      handedOff: async (event) => ({ token: event.token, holdCount: 1, viaAttempt: 0, waitId }),
      withdraw: () => this.withdraw(name, owner, leaseMs, waitId),
    });
  }

  /** A waiter gives up: leave the queue; if the lock was handed to this wait meanwhile, pass it on. */
  private async withdraw(name: string, owner: string, leaseMs: number, waitId: string): Promise<void> {
    try {
      const requestId = this.nextRequestId();
      await releaseScript.run(
        this.redis,
        releaseInput({ name, owner, leaseMs, mode: 'cancel', requestId, waitId, sharded: this.sharded }),
      );
    } catch {
      // Redis unreachable: the queue entry lapses after its eligibility, a handed lock after its lease.
    }
  }

  private async execPipeline(
    name: string,
    owner: string,
    leaseMs: number,
    hold: Hold,
    build: (pipeline: LockPipeline, hold: Hold) => void,
    acquire?: AcquireRequest,
    handedTo = '',
  ): Promise<unknown[]> {
    const pipeline = this.redis.pipeline();
    const requestId = this.nextRequestId();
    if (acquire) acquireScript.run(pipeline, acquireInput({ ...acquire, pairedRelease: requestId }));
    build(pipeline, hold);
    releaseScript.run(
      pipeline,
      releaseInput({
        name,
        owner,
        leaseMs,
        mode: 'release',
        requestId,
        waitId: handedTo,
        sharded: this.sharded,
      }),
    );
    const replies = await this.call(name, () => pipeline.exec());
    return (replies ?? []).map(([err, value]) => {
      if (err) throw err;
      return value;
    });
  }

  private async call<T>(name: string, op: () => Promise<T>): Promise<T> {
    try {
      return await op();
    } catch (err) {
      if (isConnectionError(err)) throw new LockUnavailableError(name, err);
      throw err;
    }
  }
}
