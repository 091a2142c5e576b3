// Typed lock errors, each with a stable code so callers branch on `code`, not on message text.
import { CodedError, type LockErrorCode } from './coded-error.ts';

/** Base of every lock error; branch on `code`. */
export class LockError extends CodedError<LockErrorCode> {}

/** The wait budget ran out while another owner held the lock. */
export class LockAcquireTimeoutError extends LockError {
  constructor(
    readonly lockName: string,
    readonly waitedMs: number,
  ) {
    super('lock_timeout', `lock "${lockName}" not acquired within ${Math.round(waitedMs)} ms`, { lockName });
  }
}

/** A held lock was lost: its lease lapsed, it was deleted, or renewal could not reach Redis in time. */
export class LockLostError extends LockError {
  constructor(
    readonly lockName: string,
    reason: string,
  ) {
    super('lock_lost', `lock "${lockName}" lost: ${reason}`, { lockName });
  }
}

/** Release or extend by an owner that does not hold the lock; the lock is left untouched. */
export class LockNotHeldError extends LockError {
  constructor(readonly lockName: string) {
    super('lock_not_held', `lock "${lockName}" is not held by this owner`, { lockName });
  }
}

/** The lock's server (Redis, etcd, ZooKeeper) could not be reached for a lock operation. */
export class LockUnavailableError extends LockError {
  constructor(lockName: string, cause: unknown, backend = 'Redis') {
    super('lock_unavailable', `${backend} unreachable for lock "${lockName}"`, { lockName }, { cause });
  }
}

/**
 * A read-lock holder asked for the write lock. Refused at once: two readers upgrading would each wait
 * for the other to leave (Redisson's read-write lock deadlocks here). Release the read lock first, or
 * take the write lock first and downgrade.
 */
export class LockUpgradeError extends LockError {
  constructor(readonly lockName: string) {
    super(
      'lock_upgrade',
      `lock "${lockName}": a read-lock holder cannot take the write lock; release the read lock first`,
      { lockName },
    );
  }
}

/**
 * Multi-master lock: too few masters answered in time for a majority (the lock may or may not be held
 * elsewhere; that could not be decided). Distinct from LockAcquireTimeoutError, which means a majority
 * answered and another owner held the lock.
 */
export class LockQuorumUnavailableError extends LockError {
  constructor(
    readonly lockName: string,
    /** Masters that answered in the last round. */
    readonly reachable: number,
    readonly needed: number,
    readonly total: number,
    /** Why, when not simply too few masters answering (e.g. a majority answered too late). */
    reason?: string,
    cause?: unknown,
  ) {
    super(
      'lock_quorum_unavailable',
      `lock "${lockName}": ${reason ?? `only ${reachable} of ${total} masters answered, ${needed} needed`}`,
      { lockName, reachable, needed, total },
      cause === undefined ? undefined : { cause },
    );
  }
}
