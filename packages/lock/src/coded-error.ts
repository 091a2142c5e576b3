// The base of the lock library's errors (a stable machine-readable `code`, details), and how a lost
// connection is told from a wrong request (the test, reusable for other clients: src/errors.ts).

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
 *
 * A class with `static readonly refusal = true` is an expected answer (sold out, busy, rate limited…),
 * never a fault: its instances capture no stack trace, which was most of the cost of building one
 * (thousands a second under a herd) and which nobody reads.
 */
export abstract class CodedError<Code extends string> extends Error {
  readonly code: Code;
  readonly details: Record<string, unknown>;

  constructor(code: Code, message: string, details: Record<string, unknown> = {}, options?: ErrorOptions) {
    const limit = Error.stackTraceLimit;
    if ((new.target as { refusal?: boolean }).refusal === true) Error.stackTraceLimit = 0;
    try {
      super(message, options);
    } finally {
      Error.stackTraceLimit = limit;
    }
    this.code = code;
    this.details = details;
    this.name = new.target.name;
  }
}

/** Error codes of a network failure (Node's socket errors): the server could not be reached. */
export const NETWORK_ERROR_CODES: readonly string[] = [
  'ECONNREFUSED',
  'ECONNRESET',
  'ENOTFOUND',
  'EAI_AGAIN',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'EPIPE',
];

/**
 * What ioredis says, without a code, when it cannot reach Redis; and the replies of a Redis that
 * refuses to run a command for now (failover, slot migration, loading, too few replicas): none of
 * them ran it, and ioredis hands them on once its redirections or retries are spent. A pipeline
 * grouped by master that ioredis refuses whole ("same slots allocation group") met a slot map that
 * changed under it: nothing of it was sent.
 */
export const REDIS_UNREACHABLE_MESSAGES =
  /Connection is closed|Stream isn't writeable|Reached the max retries|Too many Cluster redirections|Failed to refresh slots cache|None of startup nodes is available|Cluster isn't ready|should belong to the same slots allocation group|^(CLUSTERDOWN|TRYAGAIN|LOADING|MASTERDOWN|READONLY|NOREPLICAS|MOVED|ASK) /i;

/**
 * A test telling "the server is not reachable right now" from "this request is wrong", by the error's
 * code or, for clients that give none, its message; an AggregateError is one when any of its errors is.
 */
export function connectionErrorTest(codes: Iterable<string>, messages: RegExp): (err: unknown) => boolean {
  const known = new Set(codes);
  const test = (err: unknown): boolean => {
    if (!(err instanceof Error)) return false;
    const code = (err as { code?: unknown }).code;
    if (typeof code === 'string' && known.has(code)) return true;
    if (err instanceof AggregateError) return err.errors.some(test);
    if (err.name === 'MaxRetriesPerRequestError') return true;
    return messages.test(err.message);
  };
  return test;
}

/** True when the error means Redis (or the network to it) is not reachable right now. */
export const isConnectionError = connectionErrorTest(NETWORK_ERROR_CODES, REDIS_UNREACHABLE_MESSAGES);
