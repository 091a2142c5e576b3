// The lock service that guards the shard decrements (LOCK_BACKEND): the Redis lock client, or an etcd
// or ZooKeeper lock whose fencing token reserve.lua checks against the shard's fence for that service.
import { EtcdLock, type LockEventObserver, type LockFrontEnd, ZooKeeperLock } from '../lock/index.ts';

export type LockBackendName = 'redis' | 'etcd' | 'zookeeper';

/** Where the etcd and ZooKeeper locks connect (Config's ETCD_ENDPOINTS and ZOOKEEPER_CONNECT). */
export interface LockBackendConfig {
  LOCK_BACKEND: LockBackendName;
  ETCD_ENDPOINTS: readonly string[];
  ZOOKEEPER_CONNECT: string;
}

/**
 * Shard locks on a lock service other than the stock's Redis. The lock and the stock are then on
 * different servers, so an order takes the lock (one round trip on a free shard), reserves with the
 * hold's token (one to Redis), and releases without waiting for the answer. The token order is the
 * service's own (etcd create revision, ZooKeeper creation zxid), so each service has its own fence
 * key per shard: tokens of different services are never compared.
 */
export class ExternalShardLocks {
  private constructor(
    readonly backend: Exclude<LockBackendName, 'redis'>,
    readonly locks: LockFrontEnd & { ping(): Promise<void>; close(): Promise<void> },
  ) {}

  /**
   * Connects to the configured service; undefined for LOCK_BACKEND=redis (the Redis lock client
   * serves). `onEvent` observes the locks as LockClient's does (the service's lock metrics).
   */
  static async connect(
    config: LockBackendConfig,
    options: { clientId?: string; onEvent?: LockEventObserver } = {},
  ): Promise<ExternalShardLocks | undefined> {
    switch (config.LOCK_BACKEND) {
      case 'redis':
        return undefined;
      case 'etcd':
        return new ExternalShardLocks(
          'etcd',
          await EtcdLock.connect({ endpoints: config.ETCD_ENDPOINTS, ...options }),
        );
      case 'zookeeper':
        return new ExternalShardLocks(
          'zookeeper',
          await ZooKeeperLock.connect({ connect: config.ZOOKEEPER_CONNECT, ...options }),
        );
    }
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
