// Public surface of the lock library; usable without the rest of flashsale.
export {
  type AcquireOptions,
  type GuardedOptions,
  type Hold,
  LockClient,
  type LockClientOptions,
  type LockEvent,
} from './client.ts';
export {
  LockAcquireTimeoutError,
  LockError,
  LockLostError,
  LockNotHeldError,
  LockQuorumUnavailableError,
  LockUnavailableError,
  LockUpgradeError,
} from './errors.ts';
export { FairLock } from './fair.ts';
export { LockHandle } from './handle.ts';
export { fairKeys, lockKeys, prefixName, rwKeys } from './keys.ts';
export { withOwner } from './owner.ts';
export type { QueuedAcquireOptions, QueuedLockOptions } from './queued.ts';
export { ReadWriteLock, ReadWriteSide } from './read-write.ts';
export { RedLock, type RedLockOptions } from './redlock.ts';
export type { LockPipeline } from './scripts.ts';
