// The CLI's one error type: a failure reported as `error: <code>: <message>` with exit status 2, where
// the code is the service's own error code, or the CLI's (usage, unreachable, invalid_request).

export class CliError extends Error {
  /** `field`: the request field the service refused (its answer's `field`), when it named one. */
  constructor(
    readonly code: string,
    message: string,
    readonly field?: string,
  ) {
    super(message);
    this.name = 'CliError';
  }
}
