// Public surface of the lock library (@flashsale/lock); it imports nothing outside the package.
// Redis locks here; the etcd and ZooKeeper backends load their clients only when used.
export {
  type GuardedOptions,
  type Hold,
  LockClient,
  type LockClientOptions,
} from './client.ts';
export type { LockErrorCode } from './coded-error.ts';
export {
  LockAcquireTimeoutError,
  LockError,
  LockLostError,
  LockNotHeldError,
  LockQuorumUnavailableError,
  LockUnavailableError,
  LockUpgradeError,
} from './errors.ts';
export { EtcdLock, type EtcdLockOptions } from './etcd/etcd-lock.ts';
export { FairLock } from './fair.ts';
export {
  type AcquireOptions,
  type LockEvent,
  type LockEventObserver,
  LockFrontEnd,
  type ObtainRequest,
} from './front-end.ts';
export { LockHandle } from './handle.ts';
export { PeerMissingError } from './optional-peer.ts';
export { withOwner } from './owner.ts';
export type { QueuedAcquireOptions, QueuedLockOptions } from './queued.ts';
export { ReadWriteLock, ReadWriteSide } from './read-write.ts';
export type { RedisConnection } from './redis-client.ts';
export { RedLock, type RedLockOptions } from './redlock.ts';
export type { LockPipeline } from './scripts.ts';
export { SessionLock } from './session-lock.ts';
export { ZooKeeperLock, type ZooKeeperLockOptions } from './zookeeper/zookeeper-lock.ts';
