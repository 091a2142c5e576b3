// The base of the lock library's errors (a stable machine-readable `code`, details), and how a lost
// connection is told from a wrong request; the service's own errors share both (src/errors.ts).

/** The codes of the lock library's errors (src/lock/errors.ts), one per error class. */
export type LockErrorCode =
  | 'lock_timeout'
  | 'lock_lost'
  | 'lock_not_held'
  | 'lock_unavailable'
  | 'lock_upgrade'
  | 'lock_quorum_unavailable';

/**
 * An error with a stable machine-readable `code` to branch on, and structured details. Abstract: each
 * family of errors fixes its own union of codes (LockError: LockErrorCode), so a code is never free text.
 */
export abstract class CodedError<Code extends string> extends Error {
  constructor(
    readonly code: Code,
    message: string,
    readonly details: Record<string, unknown> = {},
    options?: ErrorOptions,
  ) {
    super(message, options);
    this.name = new.target.name;
  }
}

const CONNECTION_ERROR_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ENOTFOUND',
  'EAI_AGAIN',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'EPIPE',
  // SQLSTATE class 08 (connection exception) and 57P0x (admin shutdown, cannot connect now).
  '08000',
  '08003',
  '08006',
  '08001',
  '08004',
  '57P01',
  '57P02',
  '57P03',
]);

/**
 * True when the error means "Redis or Postgres is not reachable right now" rather than "this request
 * is wrong": such failures answer 503, never 500.
 */
export function isConnectionError(err: unknown): boolean {
  if (!(err instanceof Error)) return false;
  const code = (err as { code?: unknown }).code;
  if (typeof code === 'string' && CONNECTION_ERROR_CODES.has(code)) return true;
  if (err instanceof AggregateError) return err.errors.some(isConnectionError);
  if (err.name === 'MaxRetriesPerRequestError') return true;
  // pg and ioredis report these without a code.
  return /Connection terminated|timeout exceeded when trying to connect|Client has encountered a connection error|Connection is closed|Stream isn't writeable|Reached the max retries/i.test(
    err.message,
  );
}
