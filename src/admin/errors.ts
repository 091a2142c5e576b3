// Errors of the admin's sale changes: the trail or the backstop that must go with a change failed.
import { FlashsaleError } from '../errors.ts';

/** The audit row could not be written before the change, so the change was not made. */
export class AuditUnavailableError extends FlashsaleError {
  constructor(cause: unknown) {
    super('unavailable', 'the audit trail (Postgres) is unavailable; nothing was changed', {}, { cause });
  }
}

/** The sale was (re)created, but Postgres' per-user limit could not follow; the same PUT again fixes it. */
export class LimitBackstopError extends FlashsaleError {
  constructor(productId: string, cause: unknown) {
    super(
      'unavailable',
      `the sale of "${productId}" was changed, but Postgres' per-user limit could not follow; retry the same PUT`,
      { productId },
      { cause },
    );
  }
}
