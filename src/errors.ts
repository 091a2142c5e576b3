// Typed errors shared by every module: each carries a stable machine-readable code, and the HTTP
// layer maps codes to statuses in one place (src/http/errors.ts), so modules never know about HTTP.

import { LockError } from '@flashsale/lock';
import { CodedError, type LockErrorCode } from '@flashsale/lock/toolkit';

export { isConnectionError } from '@flashsale/lock/toolkit';

/**
 * Every code an error of the service can carry: its own and the lock library's (whose errors reach
 * the HTTP layer too). The status table (src/http/errors.ts) must map each one, or it does not compile.
 */
export type ErrorCode =
  | LockErrorCode
  | 'invalid_request'
  | 'invalid_encoding'
  | 'unauthorized'
  | 'unauthenticated'
  | 'invalid_signature'
  | 'buyer_mismatch'
  | 'forbidden'
  | 'not_owner'
  | 'unknown_product'
  | 'unknown_order'
  | 'not_found'
  | 'method_not_allowed'
  | 'request_timeout'
  | 'sold_out'
  | 'not_started'
  | 'sale_ended'
  | 'limit_exceeded'
  | 'insufficient_stock'
  | 'stock_limit_exceeded'
  | 'request_in_progress'
  | 'invalid_ticket'
  | 'queued'
  | 'order_expired'
  | 'order_cancelled'
  | 'already_paid'
  | 'payload_too_large'
  | 'headers_too_large'
  | 'unsupported_media_type'
  | 'idempotency_key_reused'
  | 'busy'
  | 'rate_limited'
  | 'too_many_attempts'
  | 'unavailable'
  | 'outcome_unknown'
  | 'migration_failed';

/** Base of the service's own errors; the lock library's share its base (CodedError) but not this class. */
export class FlashsaleError extends CodedError<ErrorCode> {}

/** An error with a code of the service's table: the service's own or the lock library's. */
export function isCodedError(err: unknown): err is CodedError<ErrorCode> {
  return err instanceof FlashsaleError || err instanceof LockError;
}

/** Redis (or Postgres) could not be reached for an operation that needs it. */
export class UnavailableError extends FlashsaleError {
  constructor(what: string, cause?: unknown) {
    super('unavailable', `${what} is unavailable`, {}, { cause });
  }
}
