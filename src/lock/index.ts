// Public surface of the lock library; usable without the rest of flashsale.
export { type AcquireOptions, type Hold, LockClient, type LockClientOptions } from './client.ts';
export {
  LockAcquireTimeoutError,
  LockError,
  LockLostError,
  LockNotHeldError,
  LockUnavailableError,
} from './errors.ts';
export { LockHandle } from './handle.ts';
export { lockKeys, prefixName } from './keys.ts';
export { withOwner } from './owner.ts';
export { LOCK_SCRIPTS, type LockPipeline, type LockRedis } from './scripts.ts';
