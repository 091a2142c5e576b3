// The lock kinds the conformance suite runs against, opened the same way in the test process and in
// its child processes: a kind's name plus the ports of its servers, whatever the backend.
import { Redis } from 'ioredis';
import {
  EtcdLock,
  FairLock,
  LockClient,
  type LockEventObserver,
  type LockFrontEnd,
  ReadWriteLock,
  RedLock,
  ZooKeeperLock,
} from '../../src/index.ts';

export const REDIS_KINDS = ['reentrant', 'fair', 'rw-write', 'redlock'] as const;
export type KindName = (typeof REDIS_KINDS)[number] | 'etcd' | 'zookeeper';

/** How to reach a kind's servers: one port (three Redis masters for RedLock). */
export interface KindConfig {
  kind: KindName;
  ports: number[];
  /** The lease kept alive while held: the watchdog lease, etcd's lease TTL, ZooKeeper's session. */
  leaseMs: number;
}

/** A lock of the kind, and how to close everything it opened (its connections included). */
export interface OpenLock {
  locks: LockFrontEnd;
  close(): Promise<void>;
}

function redisOn(port: number): Redis {
  const redis = new Redis(port, '127.0.0.1', { maxRetriesPerRequest: null });
  redis.on('error', () => {});
  return redis;
}

/** One LockClient, and the kind built on it. */
async function openOnClient(config: KindConfig, onEvent?: LockEventObserver): Promise<OpenLock> {
  const redis = redisOn(config.ports[0] as number);
  const client = new LockClient(redis, { watchdogLeaseMs: config.leaseMs, ...(onEvent ? { onEvent } : {}) });
  const close = async () => {
    await client.close();
    await redis.quit();
  };
  if (config.kind === 'fair') return { locks: new FairLock(client), close };
  if (config.kind === 'rw-write') return { locks: new ReadWriteLock(client).write, close };
  return { locks: client, close };
}

/** Opens a lock of the kind; `onEvent` observes its events. */
export async function openKind(config: KindConfig, onEvent?: LockEventObserver): Promise<OpenLock> {
  const events = onEvent ? { onEvent } : {};
  switch (config.kind) {
    case 'redlock': {
      const masters = config.ports.map(redisOn);
      const locks = new RedLock(masters, { watchdogLeaseMs: config.leaseMs, ...events });
      return {
        locks,
        close: async () => {
          await locks.close();
          await Promise.all(masters.map((m) => m.quit()));
        },
      };
    }
    case 'etcd': {
      const locks = await EtcdLock.connect({
        endpoints: `http://127.0.0.1:${config.ports[0]}`,
        leaseTtlSeconds: Math.ceil(config.leaseMs / 1000),
        heartbeatMs: 300,
        ...events,
      });
      return { locks, close: () => locks.close() };
    }
    case 'zookeeper': {
      const locks = await ZooKeeperLock.connect({
        connect: `127.0.0.1:${config.ports[0]}`,
        sessionTimeoutMs: config.leaseMs,
        heartbeatMs: 300,
        ...events,
      });
      return { locks, close: () => locks.close() };
    }
    default:
      return openOnClient(config, onEvent);
  }
}
