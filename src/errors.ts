// Typed errors shared by every module: each carries a stable machine-readable code, and the HTTP
// layer maps codes to statuses in one place (src/http/errors.ts), so modules never know about HTTP.
export class FlashsaleError extends Error {
  constructor(
    readonly code: string,
    message: string,
    readonly details: Record<string, unknown> = {},
    options?: ErrorOptions,
  ) {
    super(message, options);
    this.name = new.target.name;
  }
}

/** Redis (or Postgres) could not be reached for an operation that needs it. */
export class UnavailableError extends FlashsaleError {
  constructor(what: string, cause?: unknown) {
    super('unavailable', `${what} is unavailable`, {}, { cause });
  }
}
