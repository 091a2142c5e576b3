// Public surface of the lock library; usable without the rest of flashsale.
export { type AcquireOptions, type Hold, LockClient, type LockClientOptions } from './client.ts';
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
export { FAMILY_SCRIPTS } from './family-scripts.ts';
export { LockHandle } from './handle.ts';
export { fairKeys, lockKeys, prefixName, rwKeys } from './keys.ts';
export { withOwner } from './owner.ts';
export type { QueuedAcquireOptions, QueuedLockOptions } from './queued.ts';
export { ReadWriteLock, ReadWriteSide } from './read-write.ts';
export { RedLock, type RedLockOptions } from './redlock.ts';
export { LOCK_SCRIPTS, type LockPipeline } from './scripts.ts';
