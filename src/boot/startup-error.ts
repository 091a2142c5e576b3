// The error of a refused start: its message is the one line an entry point prints before exit 1,
// naming what to start or set, never a secret.

/** A start refused for a reason the operator fixes (configuration, an unreachable service). */
export class StartupError extends Error {
  readonly code = 'startup_refused';

  constructor(line: string) {
    super(line);
    this.name = 'StartupError';
  }
}
