// The configuration's error: every missing or invalid setting at once, in the one line to print.
// It names the variable to fix and never carries a secret (URL passwords are masked).

/**
 * Configuration values are missing or invalid; its message is the one line to print, listing every
 * problem (`problems`, each naming its variable), then `hint` (what a kind of run needs).
 */
export class ConfigError extends Error {
  readonly code = 'config_invalid';
  readonly problems: string[];

  constructor(problems: string | string[], hint?: string) {
    const list = typeof problems === 'string' ? [problems] : problems;
    const count = list.length > 1 ? `${list.length} problems: ` : '';
    super(`invalid configuration: ${count}${list.join('; ')}${hint ? `. ${hint}` : ''}`);
    this.name = 'ConfigError';
    this.problems = list;
  }
}
