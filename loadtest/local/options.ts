// Settings of a local run: the k6 scripts' variables (loadtest/README.md), read from the
// environment like k6's -e, or from the command line as --kebab-case flags, which win:
// `--rate 200` is RATE=200, `--reshard-every 2` is RESHARD_EVERY=2, a bare `--thresholds` is 1.
// Durations take k6 notation (30s, 2m, 1h30m) or plain seconds (20).

import { parseDuration as parseK6Duration } from '../contract.js';

export class UsageError extends Error {}

export interface Options {
  scenario: string;
  /** Variables from the environment. */
  env: Record<string, string>;
  /** Variables from the command line (they win). */
  flags: Record<string, string>;
}

export function parseArgs(argv: string[], environment: NodeJS.ProcessEnv = process.env): Options {
  const env: Record<string, string> = {};
  for (const [k, v] of Object.entries(environment)) if (v !== undefined && v !== '') env[k] = v;
  const flags: Record<string, string> = {};
  let scenario: string | undefined;
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i] as string;
    if (!arg.startsWith('--')) {
      if (scenario !== undefined) throw new UsageError(`unexpected argument "${arg}"`);
      scenario = arg;
      continue;
    }
    const eq = arg.indexOf('=');
    const flag = eq === -1 ? arg.slice(2) : arg.slice(2, eq);
    if (!/^[a-z][a-z0-9-]*$/.test(flag)) throw new UsageError(`bad flag "${arg}"`);
    const name = flag.toUpperCase().replaceAll('-', '_');
    let value: string;
    if (eq !== -1) value = arg.slice(eq + 1);
    else if (i + 1 < argv.length && !(argv[i + 1] as string).startsWith('--')) value = argv[++i] as string;
    else value = '1';
    flags[name] = value;
  }
  if (scenario === undefined)
    throw new UsageError('which scenario? (flash-sale, reshard-under-load, sold-out-storm, soak, ci)');
  return { scenario, env, flags };
}

/** Typed access to the variables, with the k6 scripts' validation (a typo stops the run, naming it). */
export class Vars {
  constructor(readonly raw: Record<string, string>) {}

  has(name: string): boolean {
    return this.raw[name] !== undefined && this.raw[name] !== '';
  }

  string(name: string, fallback: string): string {
    return this.has(name) ? (this.raw[name] as string) : fallback;
  }

  int(name: string, fallback: number, min = 1): number {
    const raw = this.string(name, String(fallback));
    const value = Number(raw);
    if (!Number.isInteger(value) || value < min) {
      throw new UsageError(`${name} must be an integer >= ${min}, got "${raw}"`);
    }
    return value;
  }

  number(name: string, fallback: number): number {
    const raw = this.string(name, String(fallback));
    const value = Number(raw);
    if (!Number.isFinite(value) || value <= 0)
      throw new UsageError(`${name} must be a number > 0, got "${raw}"`);
    return value;
  }

  bool(name: string, fallback: boolean): boolean {
    const raw = this.string(name, fallback ? '1' : '0').toLowerCase();
    if (['1', 'true', 'yes', 'on'].includes(raw)) return true;
    if (['0', 'false', 'no', 'off'].includes(raw)) return false;
    throw new UsageError(`${name} must be 1/0 (or true/false), got "${raw}"`);
  }

  /** Seconds. */
  duration(name: string, fallback: string | number): number {
    const raw = this.string(name, String(fallback));
    try {
      return parseDuration(raw);
    } catch (err) {
      throw new UsageError(`${name}: ${(err as Error).message}`);
    }
  }
}

/** Seconds in "20", "90s", "2m", "1h30m", "500ms". */
export function parseDuration(text: string): number {
  if (/^\d+(\.\d+)?$/.test(text)) return Number(text);
  return parseK6Duration(text, '20, 30s, 5m, 1h30m');
}
