// The client's errors: typed classes with unique codes. A final answer that is not an outcome of the
// sale (a bad request, a missing token) is an ApiError; a service that stays unreachable, Unreachable.
import type { ErrorBody } from './wire.ts';

/** Base of every error this package throws (an abort throws the signal's reason instead). */
export class FlashsaleClientError extends Error {
  constructor(
    /** Unique per class: `api_error`, `unreachable`, `protocol_error`. */
    readonly code: string,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
    this.name = new.target.name;
  }
}

/**
 * The service answered with an error that retrying cannot change and that is no outcome of the sale:
 * `400 invalid_request`, `401 unauthenticated`, `403 not_owner`, `404 unknown_order`, `422 idempotency_key_reused`, …
 */
export class ApiError extends FlashsaleClientError {
  constructor(
    /** The HTTP status. */
    readonly status: number,
    /** The answer's body; `body.error` is the service's code. */
    readonly body: ErrorBody,
  ) {
    super('api_error', `${status} ${body.error}: ${body.message}`);
  }

  /** The service's error code (`body.error`). */
  get error(): string {
    return this.body.error;
  }
}

/** Every attempt of one call failed to get an answer it could act on (network down, 5xx, busy): it gave up. */
export class UnreachableError extends FlashsaleClientError {
  constructor(
    readonly attempts: number,
    /** What the last attempt got: an answer's status and code, or the network error. */
    readonly last: string,
    options?: { cause?: unknown },
  ) {
    super('unreachable', `no usable answer after ${attempts} attempts (last: ${last})`, options);
  }
}

/** The service answered something this client does not understand (not JSON, a stream without its result). */
export class ProtocolError extends FlashsaleClientError {
  constructor(message: string) {
    super('protocol_error', message);
  }
}
