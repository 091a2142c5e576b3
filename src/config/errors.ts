// The configuration's error: a missing or invalid setting, whose message is the one line to print.
// It names the variable to fix and never carries a secret (URL passwords are masked).

/** A configuration value is missing or invalid; its message is the one line to print. */
export class ConfigError extends Error {
  readonly code = 'config_invalid';

  constructor(problem: string) {
    super(`invalid configuration: ${problem}`);
    this.name = 'ConfigError';
  }
}
