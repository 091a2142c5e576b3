// A test-only stand-in for a Java service using Redisson getLock(name): Redisson's own scripts (verbatim
// from the seeds) and waiting loop, with key names derived independently of src/.

import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import type { Cluster, Redis } from 'ioredis';
import { RETRY_CAP_MS } from '../../src/waiting.ts';

/**
 * RedissonLock.tryLockInnerAsync, verbatim from seed 000 (source document 000 of the design brief, not in this repository,
 * "2. 加鎖"); seed 003 (RedLock walkthrough, RedissonLock.tryLockInnerAsync) carries the same text.
 * KEYS[1] = getName(), ARGV[1] = internalLockLeaseTime, ARGV[2] = getLockName(threadId).
 * Returns nil when acquired (or re-entered), otherwise the holder's PTTL.
 */
export const REDISSON_LOCK_SCRIPT =
  "if (redis.call('exists', KEYS[1]) == 0) then " +
  "redis.call('hset', KEYS[1], ARGV[2], 1); " +
  "redis.call('pexpire', KEYS[1], ARGV[1]); " +
  'return nil; ' +
  'end; ' +
  "if (redis.call('hexists', KEYS[1], ARGV[2]) == 1) then " +
  "redis.call('hincrby', KEYS[1], ARGV[2], 1); " +
  "redis.call('pexpire', KEYS[1], ARGV[1]); " +
  'return nil; ' +
  'end; ' +
  "return redis.call('pttl', KEYS[1]);";

/**
 * RedissonLock.unlockInnerAsync, verbatim from seed 000 (source document 000 of the design brief, not in this repository,
 * "3. 解鎖"). KEYS[1] = getName(), KEYS[2] = getChannelName() = redisson_lock__channel:{name},
 * ARGV[1] = LockPubSub.unlockMessage = 0, ARGV[2] = internalLockLeaseTime, ARGV[3] = getLockName(threadId).
 * Returns 1 when released (or the key was absent), 0 when re-entry holds remain, nil when not the owner.
 */
export const REDISSON_UNLOCK_SCRIPT =
  "if (redis.call('exists', KEYS[1]) == 0) then " +
  "redis.call('publish', KEYS[2], ARGV[1]); " +
  'return 1; ' +
  'end;' +
  "if (redis.call('hexists', KEYS[1], ARGV[3]) == 0) then " +
  'return nil;' +
  'end; ' +
  "local counter = redis.call('hincrby', KEYS[1], ARGV[3], -1); " +
  'if (counter > 0) then ' +
  "redis.call('pexpire', KEYS[1], ARGV[2]); " +
  'return 0; ' +
  'else ' +
  "redis.call('del', KEYS[1]); " +
  "redis.call('publish', KEYS[2], ARGV[1]); " +
  'return 1; ' +
  'end; ' +
  'return nil;';

/**
 * The unlock script of Redisson 3.22+ on a Redis 7 cluster, whose waiters SSUBSCRIBE: Redisson passes
 * its publish command in (`getSubscribeService().getPublishCommand()`), SPUBLISH there.
 */
export const REDISSON_SHARDED_UNLOCK_SCRIPT = REDISSON_UNLOCK_SCRIPT.replaceAll("'publish'", "'spublish'");

/** LockPubSub.unlockMessage. */
export const REDISSON_UNLOCK_MESSAGE = 0;

/** Redisson's RedissonObject.prefixName (independent copy): `prefix:name` if the name has a brace, else `prefix:{name}`. */
export function redissonPrefixName(prefix: string, name: string): string {
  if (name.includes('{')) return `${prefix}:${name}`;
  return `${prefix}:{${name}}`;
}

/** RedissonLock.getChannelName(). */
export function redissonChannelName(name: string): string {
  return redissonPrefixName('redisson_lock__channel', name);
}

/** Redisson's RedissonLockEntry latch: a counting semaphore, one permit per unlock message. */
class Semaphore {
  private permits = 0;
  private readonly waiting: Array<() => void> = [];

  release(): void {
    const next = this.waiting.shift();
    if (next) next();
    else this.permits += 1;
  }

  /** Resolves true with a permit, false after timeoutMs (Infinity: wait for a permit forever). */
  tryAcquire(timeoutMs: number): Promise<boolean> {
    if (this.permits > 0) {
      this.permits -= 1;
      return Promise.resolve(true);
    }
    return new Promise((resolve) => {
      let timer: NodeJS.Timeout | undefined;
      const grant = () => {
        clearTimeout(timer);
        resolve(true);
      };
      this.waiting.push(grant);
      if (Number.isFinite(timeoutMs)) {
        timer = setTimeout(() => {
          const i = this.waiting.indexOf(grant);
          if (i >= 0) this.waiting.splice(i, 1);
          resolve(false);
        }, timeoutMs);
      }
    });
  }
}

interface Entry {
  refs: number;
  latch: Semaphore;
  subscribed: Promise<unknown>;
}

export interface ForeignLockOptions {
  leaseMs: number;
  /** Give up after this long (Redisson tryLock(waitTime, ...)); forever by default (lock()). */
  waitMs?: number;
}

/**
 * One Redisson client (one UUID, as `Redisson.create()` gets), whose "threads" are plain numbers.
 * `redis` runs the scripts; `sub` is the pub/sub connection (Redisson keeps separate ones too).
 */
export class ForeignRedisson {
  readonly id = randomUUID();
  /** Every message received, per channel, in order. */
  readonly received = new Map<string, string[]>();
  /** How many times the acquire script ran (each attempt of each thread). */
  attempts = 0;
  private readonly entries = new Map<string, Entry>();

  /**
   * `sharded`: Redisson 3.22+ on a Redis Cluster, waiting with SSUBSCRIBE and releasing with SPUBLISH
   * (`redis` and `sub` are then cluster clients, `sub` with sharded subscribers).
   */
  constructor(
    private readonly redis: Redis | Cluster,
    private readonly sub: Redis | Cluster,
    private readonly sharded = false,
  ) {
    sub.on(sharded ? 'smessage' : 'message', (channel: string, message: string) => {
      const list = this.received.get(channel) ?? [];
      list.push(message);
      this.received.set(channel, list);
      // LockPubSub.onMessage: the unlock message releases one permit of the entry's latch.
      if (message === String(REDISSON_UNLOCK_MESSAGE)) this.entries.get(channel)?.latch.release();
    });
  }

  /** RedissonLock.getLockName(threadId): `<uuid>:<threadId>`. */
  lockName(threadId: number): string {
    return `${this.id}:${threadId}`;
  }

  /** One run of the acquire script: null when acquired, else the holder's PTTL. */
  async tryAcquireOnce(name: string, threadId: number, leaseMs: number): Promise<number | null> {
    this.attempts += 1;
    const reply = await this.redis.eval(REDISSON_LOCK_SCRIPT, 1, name, leaseMs, this.lockName(threadId));
    return reply === null ? null : Number(reply);
  }

  /** One run of the unlock script: 1 released, 0 holds remain, null not held by this thread. */
  async unlock(name: string, threadId: number, leaseMs: number): Promise<number | null> {
    const reply = await this.redis.eval(
      this.sharded ? REDISSON_SHARDED_UNLOCK_SCRIPT : REDISSON_UNLOCK_SCRIPT,
      2,
      name,
      redissonChannelName(name),
      REDISSON_UNLOCK_MESSAGE,
      leaseMs,
      this.lockName(threadId),
    );
    return reply === null ? null : Number(reply);
  }

  /**
   * RedissonLock.lockInterruptibly / tryLock as in seed 000: one try; subscribe to the lock's channel;
   * then loop { try; if got a TTL, wait for an unlock message (a latch permit) or the TTL }.
   * Resolves true when acquired, false when waitMs ran out.
   */
  async lock(name: string, threadId: number, options: ForeignLockOptions): Promise<boolean> {
    const deadline = performance.now() + (options.waitMs ?? Number.POSITIVE_INFINITY);
    let ttl = await this.tryAcquireOnce(name, threadId, options.leaseMs);
    if (ttl === null) return true;
    const channel = redissonChannelName(name);
    const entry = await this.subscribe(channel);
    try {
      for (;;) {
        ttl = await this.tryAcquireOnce(name, threadId, options.leaseMs);
        if (ttl === null) return true;
        const left = deadline - performance.now();
        if (left <= 0) return false;
        await entry.latch.tryAcquire(ttl >= 0 ? Math.min(ttl, left) : left);
      }
    } finally {
      this.unsubscribe(channel);
    }
  }

  /** Subscribed channels (for asserting that a waiter listens where the releaser publishes). */
  get channels(): string[] {
    return [...this.entries.keys()];
  }

  private async subscribe(channel: string): Promise<Entry> {
    let entry = this.entries.get(channel);
    if (!entry) {
      const subscribed = this.sharded ? this.sub.ssubscribe(channel) : this.sub.subscribe(channel);
      entry = { refs: 0, latch: new Semaphore(), subscribed };
      this.entries.set(channel, entry);
    }
    entry.refs += 1;
    await entry.subscribed;
    return entry;
  }

  private unsubscribe(channel: string): void {
    const entry = this.entries.get(channel);
    if (!entry) return;
    entry.refs -= 1;
    if (entry.refs === 0) {
      this.entries.delete(channel);
      (this.sharded ? this.sub.sunsubscribe(channel) : this.sub.unsubscribe(channel)).catch(() => {});
    }
  }
}

/**
 * Runs a foreign holder's `unlock` (which must answer 1) and checks that `waiting`, one of our waiters,
 * got the lock through the unlock's message: sooner than its retry heartbeat (RETRY_CAP_MS), its only
 * other way in. Then releases the lock it got and answers the key's state before that release.
 */
export async function assertWokenByUnlock(
  waiting: Promise<{ owner: string; release(): Promise<unknown> }>,
  unlock: () => Promise<number | null>,
  redis: Redis | Cluster,
  name: string,
): Promise<void> {
  const released = Date.now();
  assert.equal(await unlock(), 1, 'the foreign unlock released its hold');
  const h = await waiting;
  const took = Date.now() - released;
  assert.ok(took < RETRY_CAP_MS, `acquired ${took} ms after the unlock: by the heartbeat, not its message`);
  assert.deepEqual(await redis.hgetall(name), { [h.owner]: '1' });
  await h.release();
}
