// One place maps error codes to HTTP statuses; every error body is { error, message, ...details }.
import { type ErrorCode, FlashsaleError, isCodedError } from '../errors.ts';

/**
 * Every code's status: a code added to ErrorCode without one here fails the typecheck. The OpenAPI
 * document's error codes and statuses are generated from it (src/http/openapi/error-bodies.ts).
 */
export const ERROR_STATUS: Readonly<Record<ErrorCode, number>> = {
  invalid_request: 400,
  invalid_encoding: 400,
  non_canonical_path: 400,
  unauthorized: 401,
  unauthenticated: 401,
  invalid_signature: 401,
  buyer_mismatch: 403,
  unknown_product: 404,
  unknown_order: 404,
  not_found: 404,
  method_not_allowed: 405,
  request_timeout: 408,
  body_timeout: 408,
  sold_out: 409,
  not_started: 409,
  sale_ended: 409,
  limit_exceeded: 409,
  insufficient_stock: 409,
  stock_limit_exceeded: 409,
  request_in_progress: 409,
  invalid_ticket: 400,
  queued: 429,
  order_expired: 409,
  order_cancelled: 409,
  already_paid: 409,
  payload_too_large: 413,
  unsupported_media_type: 415,
  headers_too_large: 431,
  idempotency_key_reused: 422,
  busy: 429,
  rate_limited: 429,
  too_many_attempts: 429,
  unavailable: 503,
  // The order may or may not exist: GET /api/orders/:orderId settles it within seconds.
  outcome_unknown: 503,
  // The lock library's codes, for a lock error that reaches HTTP untranslated (the inventory turns
  // lock_timeout into busy and lock_unavailable into unavailable): the same statuses as those.
  lock_timeout: 429,
  lock_unavailable: 503,
  lock_quorum_unavailable: 503,
  lock_lost: 503,
  lock_not_held: 503,
  // A bug, not a request's fault: a read-lock holder asking for the write lock; a failed migration.
  lock_upgrade: 500,
  migration_failed: 500,
};

export class HttpError extends FlashsaleError {}

/** A buyer or a client address is over its rate limit (RATE_LIMIT_PER_USER / RATE_LIMIT_PER_IP). */
export class RateLimitedError extends FlashsaleError {
  /** An expected answer: no stack trace (see CodedError). */
  static readonly refusal = true;

  constructor(
    by: 'user' | 'address',
    readonly retryAfterSeconds: number,
  ) {
    super('rate_limited', `too many orders from this ${by}; retry after ${retryAfterSeconds} s`, { by });
  }
}

/** An HTTP answer: status, JSON body, extra headers. */
export interface Answer {
  status: number;
  body: Record<string, unknown>;
  headers?: Record<string, string>;
}

export interface ErrorAnswer extends Answer {
  body: { error: string; message: string } & Record<string, unknown>;
  headers: Record<string, string>;
}

/** The answer for an error; anything without a code of the table is an unexpected 500. */
export function errorAnswer(err: unknown): ErrorAnswer {
  if (isCodedError(err)) {
    const status = ERROR_STATUS[err.code];
    const headers: Record<string, string> = { ...(err as { headers?: Record<string, string> }).headers };
    if (status === 429 || status === 503)
      headers['Retry-After'] = String((err as { retryAfterSeconds?: number }).retryAfterSeconds ?? 1);
    return { status, body: { error: err.code, message: err.message, ...err.details }, headers };
  }
  return { status: 500, body: { error: 'internal', message: 'internal error' }, headers: {} };
}

export const invalid = (message: string, details: Record<string, unknown> = {}) =>
  new HttpError('invalid_request', message, details);
