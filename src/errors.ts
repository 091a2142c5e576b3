// Typed errors shared by every module: each carries a stable machine-readable code, and the HTTP
// layer maps codes to statuses in one place (src/http/errors.ts), so modules never know about HTTP.

import { LockError } from '@flashsale/lock';
import {
  CodedError,
  connectionErrorTest,
  type LockErrorCode,
  NETWORK_ERROR_CODES,
  REDIS_UNREACHABLE_MESSAGES,
} from '@flashsale/lock/toolkit';

/** SQLSTATE class 08 (connection exception) and 57P0x (admin shutdown, cannot connect now). */
const POSTGRES_UNREACHABLE_CODES = ['08000', '08003', '08006', '08001', '08004', '57P01', '57P02', '57P03'];
/** What pg says, without a code, when it cannot reach Postgres. */
const POSTGRES_UNREACHABLE =
  'Connection terminated|timeout exceeded when trying to connect|Client has encountered a connection error';

/**
 * True when the error means "Redis or Postgres is not reachable right now" rather than "this request
 * is wrong": such failures answer 503, never 500.
 */
export const isConnectionError = connectionErrorTest(
  [...NETWORK_ERROR_CODES, ...POSTGRES_UNREACHABLE_CODES],
  new RegExp(`${POSTGRES_UNREACHABLE}|${REDIS_UNREACHABLE_MESSAGES.source}`, 'i'),
);

/**
 * Every code an error of the service can carry: its own and the lock library's (whose errors reach
 * the HTTP layer too). The status table (src/http/errors.ts) must map each one, or it does not compile.
 */
export type ErrorCode =
  | LockErrorCode
  | 'invalid_request'
  | 'invalid_encoding'
  | 'non_canonical_path'
  | 'unauthorized'
  | 'unauthenticated'
  | 'invalid_signature'
  | 'buyer_mismatch'
  | 'unknown_product'
  | 'unknown_order'
  | 'not_found'
  | 'method_not_allowed'
  | 'request_timeout'
  | 'body_timeout'
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
