// The lock service that guards the shard decrements (LOCK_BACKEND): the Redis lock client, or an etcd
// or ZooKeeper lock whose fencing token reserve.lua checks against the shard's fence for that service.

import { EtcdLock, type LockEventObserver, type LockFrontEnd, ZooKeeperLock } from '@flashsale/lock';
import type { LocksSection } from '../config/sections.ts';
import { HoldRelay, type TakeOptions, type Turn } from './hold-relay.ts';

export type LockBackendName = LocksSection['backend'];

/** Which service and where its locks connect (config.locks: LOCK_BACKEND, ETCD_ENDPOINTS, ZOOKEEPER_CONNECT). */
export type LockBackendConfig = Pick<LocksSection, 'backend' | 'etcdEndpoints' | 'zookeeperConnect'>;

/**
 * Shard locks on a lock service other than the stock's Redis. The lock and the stock are then on
 * different servers, so an order takes the lock (one round trip on a free shard), reserves with the
 * hold's token (one to Redis), and releases without waiting for the answer; an order behind another
 * of this process on the same shard is passed its hold (HoldRelay) and costs the service nothing.
 * The token order is the service's own (etcd create revision, ZooKeeper creation zxid), so each
 * service has its own fence key per shard: tokens of different services are never compared.
 */
export class ExternalShardLocks {
  private readonly relay: HoldRelay;

  private constructor(
    readonly backend: Exclude<LockBackendName, 'redis'>,
    readonly locks: LockFrontEnd & { ping(): Promise<void>; close(): Promise<void> },
    onEvent: LockEventObserver | undefined,
  ) {
    this.relay = new HoldRelay(locks, onEvent);
  }

  /**
   * Connects to the configured service; undefined for LOCK_BACKEND=redis (the Redis lock client
   * serves). `onEvent` observes the locks as LockClient's does (the service's lock metrics).
   */
  static async connect(
    config: LockBackendConfig,
    options: { clientId?: string; onEvent?: LockEventObserver } = {},
  ): Promise<ExternalShardLocks | undefined> {
    switch (config.backend) {
      case 'redis':
        return undefined;
      case 'etcd':
        return new ExternalShardLocks(
          'etcd',
          await EtcdLock.connect({ endpoints: config.etcdEndpoints, ...options }),
          options.onEvent,
        );
      case 'zookeeper':
        return new ExternalShardLocks(
          'zookeeper',
          await ZooKeeperLock.connect({ connect: config.zookeeperConnect, ...options }),
          options.onEvent,
        );
    }
  }

  /** An order's turn at shard lock `name` (HoldRelay.take): null when busy within `waitMs`. */
  take(name: string, options: TakeOptions): Promise<Turn | null> {
    return this.relay.take(name, options);
  }

  /** The lock service's round trip at its fastest lately (ms; 0 before the first): admission's floor. */
  roundTripMs(): number {
    return this.relay.roundTripMs();
  }

  /** The shard's fence key for this service's tokens (the Redis locks use `fence` itself). */
  fenceKey(fence: string): string {
    return `${fence}:${this.backend}`;
  }

  /** Throws when the service does not answer (/readyz). */
  ping(): Promise<void> {
    return this.locks.ping();
  }

  close(): Promise<void> {
    return this.locks.close();
  }
}
