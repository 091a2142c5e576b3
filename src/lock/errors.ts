// Typed lock errors, each with a stable code so callers branch on `code`, not on message text.
import { FlashsaleError } from '../errors.ts';

export class LockError extends FlashsaleError {}

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

/** Redis could not be reached for a lock operation. */
export class LockUnavailableError extends LockError {
  constructor(lockName: string, cause: unknown) {
    super('lock_unavailable', `Redis unreachable for lock "${lockName}"`, { lockName }, { cause });
  }
}
