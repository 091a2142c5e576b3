// The locks under comparison, behind one interface. Each adapter owns exactly one command connection
// (plus, for this library, the pub/sub connection its LockClient duplicates for wake-ups).
import type { Redis } from 'ioredis';
import { Mutex, TimeoutError } from 'redis-semaphore';
import { LockAcquireTimeoutError, LockClient } from '../src/lock/index.ts';

// redlock 5.0.0-beta.2 ships types that its package.json "exports" hides from NodeNext resolution, so
// the little of its API used here is typed locally and the module loaded untyped.
interface RedlockSettings {
  driftFactor: number;
  retryCount: number;
  retryDelay: number;
  retryJitter: number;
}
interface RedlockLock {
  release(): Promise<unknown>;
}
interface RedlockInstance {
  readonly settings: RedlockSettings;
  acquire(resources: string[], duration: number): Promise<RedlockLock>;
  on(event: 'error', listener: (err: Error) => void): unknown;
}
interface RedlockModule {
  default: new (clients: Redis[], settings?: Partial<RedlockSettings>) => RedlockInstance;
  ExecutionError: new (...args: never[]) => Error;
}
const redlockSpecifier: string = 'redlock';
const { default: Redlock, ExecutionError } = (await import(redlockSpecifier)) as RedlockModule;

export const LIBS = ['flashsale', 'redlock-default', 'redlock-tuned', 'redis-semaphore'] as const;
export type LibName = (typeof LIBS)[number];

export const LIB_LABELS: Record<LibName, string> = {
  flashsale: 'flashsale LockClient (this library)',
  'redlock-default': 'redlock 5 (defaults)',
  'redlock-tuned': 'redlock 5 (retryDelay 10, jitter 5)',
  'redis-semaphore': 'redis-semaphore Mutex (defaults)',
};

/** Lease of every lock in the benchmark: far longer than any hold, so nothing expires. */
export const LEASE_MS = 10_000;

/** The acquire gave up by itself (wait/retry budget exhausted): not an acquisition. */
export class GaveUpError extends Error {}

export type Release = () => Promise<unknown>;

export interface LockAdapter {
  /** Acquires the contended lock; rejects with GaveUpError, the signal's reason, or another error. */
  acquire(signal: AbortSignal): Promise<Release>;
  /** One uncontended acquire+release on a private key: connects, loads scripts, subscribes. */
  warmUp(): Promise<void>;
  close(): Promise<void>;
  /** Settings in effect, for the report. */
  describe(): Record<string, unknown>;
}

export function createAdapter(lib: LibName, redis: Redis, lockName: string, contender: number): LockAdapter {
  switch (lib) {
    case 'flashsale':
      return new FlashsaleAdapter(redis, lockName, contender);
    case 'redlock-default':
      return new RedlockAdapter(redis, lockName, contender, {});
    case 'redlock-tuned':
      return new RedlockAdapter(redis, lockName, contender, {
        retryDelay: 10,
        retryJitter: 5,
        retryCount: -1,
      });
    case 'redis-semaphore':
      return new SemaphoreAdapter(redis, lockName, contender);
  }
}

class FlashsaleAdapter implements LockAdapter {
  private readonly client: LockClient;

  constructor(
    redis: Redis,
    private readonly name: string,
    private readonly contender: number,
  ) {
    this.client = new LockClient(redis);
  }

  async acquire(signal: AbortSignal): Promise<Release> {
    try {
      const handle = await this.client.acquire(this.name, { waitMs: 10_000, leaseMs: LEASE_MS, signal });
      return () => handle.release();
    } catch (err) {
      if (err instanceof LockAcquireTimeoutError) throw new GaveUpError(err.message);
      throw err;
    }
  }

  async warmUp(): Promise<void> {
    const handle = await this.client.acquire(`${this.name}:warm:${this.contender}`, {
      waitMs: 10_000,
      leaseMs: LEASE_MS,
    });
    await handle.release();
  }

  close(): Promise<void> {
    return this.client.close();
  }

  describe(): Record<string, unknown> {
    return { waitMs: 10_000, leaseMs: LEASE_MS, clientPerContender: true };
  }
}

class RedlockAdapter implements LockAdapter {
  private readonly redlock: RedlockInstance;

  constructor(
    redis: Redis,
    private readonly name: string,
    private readonly contender: number,
    settings: Partial<RedlockSettings>,
  ) {
    this.redlock = new Redlock([redis], settings);
    // Redlock emits every refused attempt as an 'error' event; without a listener that would throw.
    this.redlock.on('error', () => {});
  }

  async acquire(signal: AbortSignal): Promise<Release> {
    signal.throwIfAborted();
    try {
      const lock = await this.redlock.acquire([this.name], LEASE_MS);
      return () => lock.release();
    } catch (err) {
      if (err instanceof ExecutionError) throw new GaveUpError(err.message);
      throw err;
    }
  }

  async warmUp(): Promise<void> {
    const lock = await this.redlock.acquire([`${this.name}:warm:${this.contender}`], LEASE_MS);
    await lock.release();
  }

  async close(): Promise<void> {}

  describe(): Record<string, unknown> {
    const { retryCount, retryDelay, retryJitter, driftFactor } = this.redlock.settings;
    return { retryCount, retryDelay, retryJitter, driftFactor, ttlMs: LEASE_MS };
  }
}

class SemaphoreAdapter implements LockAdapter {
  private readonly mutex: Mutex;
  private readonly warm: Mutex;

  constructor(redis: Redis, name: string, contender: number) {
    this.mutex = new Mutex(redis, name);
    this.warm = new Mutex(redis, `${name}:warm:${contender}`);
  }

  async acquire(signal: AbortSignal): Promise<Release> {
    try {
      await this.mutex.acquire(signal);
      return () => this.mutex.release();
    } catch (err) {
      if (err instanceof TimeoutError) throw new GaveUpError(err.message);
      throw err;
    }
  }

  async warmUp(): Promise<void> {
    await this.warm.acquire();
    await this.warm.release();
  }

  async close(): Promise<void> {}

  describe(): Record<string, unknown> {
    return { ...(this.mutex as unknown as { _acquireOptions?: Record<string, unknown> })._acquireOptions };
  }
}
