// The CLI's one error type: a failure reported as `error: <code>: <message>` with exit status 2, where
// the code is the service's own error code, or the CLI's (usage, unreachable, invalid_request).

export class CliError extends Error {
  constructor(
    readonly code: string,
    message: string,
  ) {
    super(message);
    this.name = 'CliError';
  }
}
