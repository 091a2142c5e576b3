// Lock-library errors as the inventory's coded errors: every path that takes a shard or admin lock
// (an order's reserve, an admin change) throws these, so no lock error reaches the HTTP layer.

import { LockAcquireTimeoutError, LockError, LockLostError, LockNotHeldError } from '@flashsale/lock';
import { UnavailableError } from '../errors.ts';
import { AdminLockLostError, BusyError } from './errors.ts';

/**
 * The service's error for a lock error met while working on `productId` with locks on `backend`
 * (Redis, etcd, ZooKeeper); any other error as it is. A lock not acquired in time is "busy, retry
 * shortly"; a lock lost or no longer held (only an admin holds one across round trips) is
 * AdminLockLostError; an unreachable lock service, or any other lock failure, is "unavailable".
 */
export function fromLockError(err: unknown, productId: string, backend = 'Redis'): unknown {
  if (!(err instanceof LockError)) return err;
  if (err instanceof LockAcquireTimeoutError) return new BusyError(productId);
  if (err instanceof LockLostError || err instanceof LockNotHeldError) {
    return new AdminLockLostError(productId, err.lockName);
  }
  return new UnavailableError(backend, err);
}

/** Runs `work`, throwing the service's error (fromLockError) for a lock error. */
export async function translatingLockErrors<T>(
  productId: string,
  backend: string,
  work: () => Promise<T>,
): Promise<T> {
  try {
    return await work();
  } catch (err) {
    throw fromLockError(err, productId, backend);
  }
}
