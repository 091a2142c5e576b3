// Typed errors shared by every module: each carries a stable machine-readable code, and the HTTP
// layer maps codes to statuses in one place (src/http/errors.ts), so modules never know about HTTP.
import { CodedError } from './lock/coded-error.ts';

/** The service's errors and the lock library's share one base, so the HTTP layer maps both. */
export { CodedError as FlashsaleError, isConnectionError } from './lock/coded-error.ts';

/** Redis (or Postgres) could not be reached for an operation that needs it. */
export class UnavailableError extends CodedError {
  constructor(what: string, cause?: unknown) {
    super('unavailable', `${what} is unavailable`, {}, { cause });
  }
}
