// The reentrant lock client: Redisson's lock layout plus fencing tokens, a per-client watchdog, and
// waiting without polling (a release wakes one queued waiter, or hands it the lock once it starved).
import { performance } from 'node:perf_hooks';
import type { LockCore } from './core.ts';
import { LockAcquireTimeoutError } from './errors.ts';
import { type Acquisition, checkLease, type LockEventObserver, type ObtainRequest } from './front-end.ts';
import { execGuarded, type GuardedBuild, type GuardedOptions } from './guarded.ts';
import { type Attempt, type Obtained, type WaitRequest, waitInQueue } from './hand-off-wait.ts';
import { LockHandle } from './handle.ts';
import { type Extended, HoldCore } from './hold-core.ts';
import { lockKeys } from './keys.ts';
import { defineScripts } from './lua.ts';
import { currentOwner, newClientId, newRequestId } from './owner.ts';
import { clientOf, isCluster, type RedisClient, type RedisConnection } from './redis-client.ts';
import { ReleaseCode, released } from './replies.ts';
import {
  acquireInput,
  acquireScript,
  DEFAULT_STARVATION_MS,
  hashOwnerTtl,
  LOCK_SCRIPTS,
  type LockPipeline,
  queueRenew,
  releaseInput,
  releaseScript,
  renewInput,
  renewScript,
} from './scripts.ts';
import { WakeHub } from './wake-hub.ts';
import { Watchdog } from './watchdog.ts';

export type { AcquireOptions, LockEvent } from './front-end.ts';
export type { GuardedOptions, Hold } from './guarded.ts';

/** Options of a LockClient; every one is optional. */
export interface LockClientOptions {
  /** Readable prefix of this client's id `<clientId>-<uuid>` (owner ids `<id>:<n>`): never shared. */
  clientId?: string;
  /** Lease kept alive by the watchdog when acquire() is given no leaseMs (Redisson: 30 s). */
  watchdogLeaseMs?: number;
  /**
   * Barging with a starvation bound (Go's sync.Mutex): a released lock is free for whichever acquire
   * reaches Redis first and one queued waiter is woken to compete; a waiter queued longer than this
   * is handed the lock directly, FIFO, so nobody barges past it. Default DEFAULT_STARVATION_MS (1 ms,
   * as Go); 0 hands every release's lock to the oldest waiter.
   */
  starvationMs?: number;
  /** Connection for pub/sub; by default a duplicate of the command connection. */
  subscriber?: RedisConnection;
  /**
   * Observes waits, hand-offs and holds (metrics). Called synchronously; whatever it throws is
   * ignored, so an observer can never change what the lock does.
   */
  onEvent?: LockEventObserver;
}

/** Thrown inside a guarded call's wait to end it when `settled` says the work is done. */
const SETTLED_WITHOUT_HOLD = Symbol('settled without hold');

/**
 * Reentrant distributed locks on one Redis, compatible with Redisson's `getLock(name)` (same hash layout,
 * same unlock channel): a Java service and this client exclude each other on the same name.
 *
 * Each acquisition gets a fencing token, strictly increasing per lock name. By default the owner is the
 * current async call chain, so a nested `withLock` in the holder's chain re-enters. Without `leaseMs`
 * a watchdog renews the lock every `watchdogLeaseMs / 3` while it is held. A waiter is queued in Redis;
 * a release frees the lock for whoever asks first and wakes only the oldest live waiter, or hands it
 * the lock straight away once it has waited `starvationMs` (Go's sync.Mutex modes), telling only that
 * waiter's client.
 *
 * @example
 * const locks = new LockClient(new Redis());
 * await locks.withLock('orders:42', { waitMs: 1000 }, async (hold) => {
 *   await writeWithFence(hold.token); // hold.signal aborts if the lock is lost
 * });
 * await locks.close();
 */
export class LockClient extends HoldCore {
  readonly watchdogLeaseMs: number;
  readonly starvationMs: number;
  private readonly redis: RedisClient;
  private readonly hub: WakeHub;
  protected readonly watchdog: Watchdog;
  private coreView: LockCore | undefined;
  /** On a Redis Cluster releases send the unlock notice with SPUBLISH, as Redisson 3.22+ expects. */
  private readonly sharded: boolean;

  /** `redis`: an ioredis `Redis` or `Cluster` (ioredis 5 or 6); the client does not close it. */
  constructor(redis: RedisConnection, options: LockClientOptions = {}) {
    super(newClientId(options.clientId), options.watchdogLeaseMs ?? 30_000, options.onEvent);
    this.watchdogLeaseMs = this.defaultLeaseMs;
    checkLease(this.watchdogLeaseMs);
    this.starvationMs = checkStarvation(options.starvationMs ?? DEFAULT_STARVATION_MS);
    this.redis = clientOf(redis);
    this.sharded = isCluster(this.redis);
    defineScripts(this.redis, LOCK_SCRIPTS);
    const subscriber = options.subscriber && clientOf(options.subscriber);
    this.hub = new WakeHub(this.redis, this.clientId, subscriber);
    this.watchdog = new Watchdog(this.redis, this.watchdogLeaseMs);
  }

  /** One acquisition: an attempt, then (with waitMs) queued in Redis until handed the lock. */
  protected async obtain(request: ObtainRequest): Promise<Acquisition | null> {
    const { name, owner, leaseMs } = request;
    let sentAt = 0;
    const got = await this.waitFor({ name, owner, leaseMs, options: request }, (req) => {
      sentAt = performance.now();
      return this.call(name, () => acquireScript.run(this.redis, acquireInput(req)));
    });
    if (!got) return null;
    // For a hand-off the lease began when the releaser ran, which is after our last attempt was sent:
    // counting from that send time can only make us think the lease ends sooner than it does.
    const handle = this.newHandle(name, owner, got, leaseMs, request.keepAlive, sentAt);
    return { handle, handoff: got.viaAttempt === 0 };
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
  async runGuarded(name: string, options: GuardedOptions, build: GuardedBuild): Promise<unknown[]> {
    const owner = this.ownerFor(options);
    const { leaseMs } = options;
    let firstReplies: unknown[] | undefined;
    let firstSentAt = 0;
    const started = performance.now();
    const got = await this.waitFor({ name, owner, leaseMs, options }, async (req) => {
      if (firstReplies !== undefined) {
        return this.call(name, () => acquireScript.run(this.redis, acquireInput(req)));
      }
      firstSentAt = performance.now();
      const hold = { owner, token: null };
      const replies = await execGuarded(this.core, { name, leaseMs, hold, build, acquire: req });
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
    this.reportObtain(name, started, got && { handoff: got.viaAttempt === 0 });
    if (!got) throw new LockAcquireTimeoutError(name, options.waitMs ?? 0);
    if (got.viaAttempt === 1 && firstReplies) {
      this.emit({ type: 'released', name, heldMs: performance.now() - firstSentAt });
      return firstReplies;
    }
    const heldFrom = performance.now();
    const hold = { owner, token: got.token };
    const replies = await execGuarded(this.core, { name, leaseMs, hold, build });
    this.emit({ type: 'released', name, heldMs: performance.now() - heldFrom });
    return replies.slice(0, -1);
  }

  /** Deletes the lock whoever holds it (and hands it to the next queued waiter). */
  async forceUnlock(name: string): Promise<boolean> {
    const requestId = newRequestId(this.clientId);
    const reply = await this.call(name, () =>
      releaseScript.run(
        this.redis,
        releaseInput({ ...this.releaseDefaults(), name, owner: '', leaseMs: 0, mode: 'force', requestId }),
      ),
    );
    return reply === ReleaseCode.Released;
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
      starvationMs: this.starvationMs,
      redis: this.redis,
      hub: this.hub,
      watchdog: this.watchdog,
      onEvent: this.onEvent,
      call: (name, op) => this.call(name, op),
      nextRequestId: () => newRequestId(this.clientId),
    };
    return this.coreView;
  }

  /** Stops the watchdog and the subscriber; held locks then expire with their lease. */
  async close(): Promise<void> {
    this.watchdog.stop();
    await this.hub.close();
  }

  // --- HandleOwner ---

  protected async releaseHold(handle: LockHandle): Promise<void> {
    const request = {
      name: handle.name,
      owner: handle.owner,
      leaseMs: handle.leaseMs,
      mode: 'release' as const,
      requestId: newRequestId(this.clientId),
    };
    const reply = await this.call(handle.name, () =>
      releaseScript.run(this.redis, releaseInput({ ...request, ...this.releaseDefaults() })),
    );
    released(handle.name, reply);
  }

  protected extendHold(handle: LockHandle, leaseMs: number): Promise<Extended> {
    return this.renewedBy(handle, leaseMs, () =>
      renewScript.run(this.redis, renewInput(handle.name, handle.owner, leaseMs)),
    );
  }

  remainingTtl(handle: LockHandle): Promise<number> {
    return this.call(handle.name, () => hashOwnerTtl(this.redis, handle.name, handle.owner));
  }

  queueRenewal(pipeline: LockPipeline, handle: LockHandle, leaseMs: number): void {
    queueRenew(pipeline, handle.name, handle.owner, leaseMs);
  }

  // --- internals ---

  private newHandle(
    name: string,
    owner: string,
    got: Obtained,
    leaseMs: number,
    watchdog: boolean,
    sentAt: number,
  ): LockHandle {
    const handle = new LockHandle(this, name, owner, got.token, got.holdCount, leaseMs, watchdog, sentAt);
    if (watchdog) this.watchdog.add(handle);
    return handle;
  }

  private releaseDefaults(): { sharded: boolean; starvationMs: number } {
    return { sharded: this.sharded, starvationMs: this.starvationMs };
  }

  /** waitInQueue() with the lease checked first. */
  private waitFor(wait: WaitRequest, attempt: Attempt): Promise<Obtained | null> {
    checkLease(wait.leaseMs);
    return waitInQueue(this.core, wait, attempt);
  }
}

/** The starvation bound goes to a script as integer ms: 0 (hand off always, FIFO) or more. */
function checkStarvation(ms: number): number {
  if (!Number.isInteger(ms) || ms < 0)
    throw new RangeError(`starvationMs must be a non-negative integer of ms, got ${ms}`);
  return ms;
}
