// The locks under comparison, behind one interface. Each adapter owns exactly one command connection
// (plus, for this library, the pub/sub connection its LockClient duplicates for wake-ups).
import { setTimeout as sleep } from 'node:timers/promises';
import {
  EtcdLock,
  LockAcquireTimeoutError,
  LockClient,
  type LockFrontEnd,
  ZooKeeperLock,
} from '@flashsale/lock';
import type { Redis } from 'ioredis';
import { Mutex, TimeoutError } from 'redis-semaphore';

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

/** The Redis locks bench/locks.ts compares. */
export const LIBS = [
  'flashsale',
  'flashsale-fifo',
  'redlock-default',
  'redlock-tuned',
  'redis-semaphore',
] as const;
/** The backends bench/lock-backends.ts compares, each after its peer's row. */
export const BACKEND_LIBS = ['flashsale', 'etcd', 'etcd3-lock', 'zookeeper', 'zookeeper-plain'] as const;
export type LibName = (typeof LIBS)[number] | (typeof BACKEND_LIBS)[number];

export const LIB_LABELS: Record<LibName, string> = {
  flashsale: 'flashsale LockClient (this library)',
  'flashsale-fifo': 'flashsale LockClient, starvationMs 0 (always handed to the oldest waiter)',
  'redlock-default': 'redlock 5 (defaults)',
  'redlock-tuned': 'redlock 5 (retryDelay 10, jitter 5)',
  'redis-semaphore': 'redis-semaphore Mutex (defaults)',
  etcd: 'flashsale EtcdLock',
  'etcd3-lock': 'etcd3 lock() retried every 5 ms',
  zookeeper: 'flashsale ZooKeeperLock',
  'zookeeper-plain': 'ZooKeeper plain ephemeral node retried every 5 ms',
};

/** Where the etcd and ZooKeeper lock clients of a phase connect (Redis: the setup's url). */
export interface LockServers {
  etcd: string;
  zookeeper: string;
}

/** BENCH_STARVATION_MS: the reentrant lock's starvation bound, to choose its default by measurement. */
const OUR_OPTIONS = process.env.BENCH_STARVATION_MS
  ? { starvationMs: Number(process.env.BENCH_STARVATION_MS) }
  : {};

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

export function createAdapter(
  lib: LibName,
  redis: Redis,
  lockName: string,
  contender: number,
  servers?: LockServers,
): LockAdapter {
  const server = (kind: keyof LockServers) => {
    if (!servers) throw new Error(`${lib} needs the ${kind} server's address`);
    return servers[kind];
  };
  switch (lib) {
    case 'flashsale':
      return new FrontEndAdapter(Promise.resolve(new LockClient(redis, OUR_OPTIONS)), lockName, contender);
    case 'flashsale-fifo':
      return new FrontEndAdapter(
        Promise.resolve(new LockClient(redis, { starvationMs: 0 })),
        lockName,
        contender,
      );
    case 'etcd':
      return new FrontEndAdapter(EtcdLock.connect({ endpoints: server('etcd') }), lockName, contender);
    case 'zookeeper':
      return new FrontEndAdapter(
        ZooKeeperLock.connect({ connect: server('zookeeper') }),
        lockName,
        contender,
      );
    case 'etcd3-lock':
      return new RetriedTryAdapter(etcd3TryLock(server('etcd')), lockName, contender);
    case 'zookeeper-plain':
      return new RetriedTryAdapter(plainZooKeeperTryLock(server('zookeeper')), lockName, contender);
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

/** Any lock of this library (its one front-end): LockClient, EtcdLock, ZooKeeperLock. */
class FrontEndAdapter implements LockAdapter {
  private client: (LockFrontEnd & { close(): Promise<void> }) | undefined;

  constructor(
    private readonly connecting: Promise<LockFrontEnd & { close(): Promise<void> }>,
    private readonly name: string,
    private readonly contender: number,
  ) {
    connecting.catch(() => {}); // awaited by warmUp
  }

  async acquire(signal: AbortSignal): Promise<Release> {
    try {
      const handle = await (this.client ?? (await this.connecting)).acquire(this.name, {
        waitMs: 10_000,
        leaseMs: LEASE_MS,
        signal,
      });
      return () => handle.release();
    } catch (err) {
      if (err instanceof LockAcquireTimeoutError) throw new GaveUpError(err.message);
      throw err;
    }
  }

  async warmUp(): Promise<void> {
    this.client = await this.connecting;
    const handle = await this.client.acquire(`${this.name}:warm:${this.contender}`, {
      waitMs: 10_000,
      leaseMs: LEASE_MS,
    });
    await handle.release();
  }

  async close(): Promise<void> {
    await (await this.connecting).close();
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

/** A peer's one-shot lock: the release when it got the lock, null when the lock was held. */
export interface TryLock {
  tryLock(name: string): Promise<Release | null>;
  close(): Promise<void>;
}

/**
 * A one-shot try lock in a retry loop, as services use etcd3's lock() or a plain ZooKeeper node: no
 * queue, no order, no wake-up; a try every 5 ms until it succeeds or the signal aborts.
 */
class RetriedTryAdapter implements LockAdapter {
  constructor(
    private readonly lock: Promise<TryLock>,
    private readonly name: string,
    private readonly contender: number,
  ) {
    lock.catch(() => {}); // awaited by warmUp
  }

  async acquire(signal: AbortSignal): Promise<Release> {
    const lock = await this.lock;
    for (;;) {
      signal.throwIfAborted();
      const release = await lock.tryLock(this.name);
      if (release) return release;
      await sleep(5);
    }
  }

  async warmUp(): Promise<void> {
    const release = await (await this.lock).tryLock(`${this.name}-warm-${this.contender}`);
    await release?.();
  }

  async close(): Promise<void> {
    await (await this.lock).close();
  }

  describe(): Record<string, unknown> {
    return { retryEveryMs: 5, ttlSeconds: LEASE_MS / 1000 };
  }
}

/** etcd3's own lock(): one transaction creating the key on a fresh lease, refused when it exists. */
async function etcd3TryLock(endpoint: string): Promise<TryLock> {
  const { Etcd3 } = await import('etcd3');
  const client = new Etcd3({ hosts: endpoint });
  return {
    tryLock: async (name) => {
      const lock = client.lock(name).ttl(LEASE_MS / 1000);
      try {
        await lock.acquire();
        return () => lock.release();
      } catch {
        return null;
      }
    },
    close: async () => client.close(),
  };
}

/** The plain ZooKeeper lock many services hand-write: one ephemeral node, refused when it exists. */
export async function plainZooKeeperTryLock(connect: string): Promise<TryLock> {
  const { default: zookeeper } = await import('node-zookeeper-client');
  const zk = zookeeper.createClient(connect, { sessionTimeout: LEASE_MS, spinDelay: 100 });
  await new Promise<void>((resolve) => {
    zk.once('connected', () => resolve());
    zk.connect();
  });
  const parent = '/bench-plain';
  await new Promise<void>((resolve) => zk.mkdirp(parent, () => resolve()));
  return {
    tryLock: async (name) => {
      const path = `${parent}/${name}`;
      const err = await new Promise<Error | null>((resolve) =>
        zk.create(path, null, zookeeper.CreateMode.EPHEMERAL, (e) => resolve(e)),
      );
      if (!err) return () => new Promise<void>((done) => zk.remove(path, -1, () => done()));
      if ((err as InstanceType<typeof zookeeper.Exception>).getCode?.() === zookeeper.Exception.NODE_EXISTS)
        return null;
      throw err;
    },
    close: async () => zk.close(),
  };
}
