// The command line parsed: the global options, the options of `sale put`, and positionals, where a
// negative number (restock shoe -5) is a value, never an option. Values are checked here only as far
// as the CLI must (whole numbers, a product id); their ranges are the service's to check.

import { parseArgs } from 'node:util';
import { closest, distance } from 'fastest-levenshtein';
import { z } from 'zod';
import { CliError } from './cli-error.ts';

/** The options of `sale put` (stock and shards required, the rest optional). */
export const SALE_OPTIONS = [
  'stock',
  'shards',
  'per-user-limit',
  'starts-at',
  'ends-at',
  'payment-timeout',
  'lottery-seconds',
] as const;
export type SaleOption = (typeof SALE_OPTIONS)[number];

export interface CommandLine {
  positionals: string[];
  help: boolean;
  json: boolean;
  url?: string;
  actor?: string;
  /** The sale options given, whatever the command (a command refuses those it does not take). */
  sale: Partial<Record<SaleOption, string>>;
}

const OPTIONS = {
  json: { type: 'boolean' },
  url: { type: 'string' },
  actor: { type: 'string' },
  help: { type: 'boolean', short: 'h' },
  ...(Object.fromEntries(SALE_OPTIONS.map((o) => [o, { type: 'string' }])) as Record<
    SaleOption,
    { type: 'string' }
  >),
} as const;

const NEGATIVE = /^-\d+$/;
/** Marks a negative number so that parseArgs takes it for a value; removed after parsing. */
const MARK = '\u0000';
const unmark = (v: string) => (v.startsWith(MARK) ? v.slice(MARK.length) : v);

function parse(args: string[]) {
  try {
    return parseArgs({ args, options: OPTIONS, allowPositionals: true, strict: true });
  } catch (err) {
    throw new CliError('usage', `${optionProblem(err as NodeJS.ErrnoException)}; see flashsale --help`);
  }
}

/** The option a parseArgs refusal is about: its text quotes it first ('--stock <value>', '-x'). */
const QUOTED_OPTION = /'(-{1,2}[^'\s<=]+)/;

/** A parseArgs refusal in a person's words: the option, and what is wrong with it. */
function optionProblem(err: NodeJS.ErrnoException): string {
  const option = QUOTED_OPTION.exec(err.message)?.[1];
  if (option === undefined) return 'the options cannot be read';
  if (err.code === 'ERR_PARSE_ARGS_UNKNOWN_OPTION') {
    return `unknown option ${option}${didYouMean(option.replace(/^-+/, ''), Object.keys(OPTIONS), '--')}`;
  }
  const known = (OPTIONS as Record<string, { type: string }>)[option.replace(/^-+/, '')];
  return known?.type === 'boolean' ? `${option} takes no value` : `${option} needs a value`;
}

/**
 * ` (did you mean <prefix><name>?)` when one of `names` is a slip of the keyboard from `typed` (up to a
 * third of it wrong, two letters at least: --start-at, --stok, stauts), else nothing.
 */
export function didYouMean(typed: string, names: readonly string[], prefix = ''): string {
  const best = closest(typed, [...names]);
  return distance(typed, best) <= Math.max(2, Math.floor(typed.length / 3))
    ? ` (did you mean ${prefix}${best}?)`
    : '';
}

export function parseCommandLine(argv: string[]): CommandLine {
  const { values, positionals } = parse(argv.map((a) => (NEGATIVE.test(a) ? `${MARK}${a}` : a)));
  const sale: CommandLine['sale'] = {};
  for (const o of SALE_OPTIONS) {
    const v = values[o];
    if (v !== undefined) sale[o] = unmark(v);
  }
  return {
    positionals: positionals.map(unmark),
    help: values.help === true,
    json: values.json === true,
    url: values.url === undefined ? undefined : unmark(values.url),
    actor: values.actor === undefined ? undefined : unmark(values.actor),
    sale,
  };
}

/** Refuses a sale option given to a command that does not take it. */
export function onlyOptions(
  command: string,
  given: CommandLine['sale'],
  allowed: readonly SaleOption[],
): void {
  const stray = SALE_OPTIONS.find((o) => given[o] !== undefined && !allowed.includes(o));
  if (stray) throw new CliError('usage', `--${stray} does not apply to "${command}"`);
}

/** The product id argument, with nothing after it. */
export function product(id: string | undefined, extra: string[]): string {
  if (id === undefined) throw new CliError('usage', 'missing <productId>');
  if (extra.length > 0) throw new CliError('usage', `unexpected argument "${extra[0]}"`);
  // The service checks the id too; checking here keeps a typo from becoming a strange URL.
  if (!/^[A-Za-z0-9_-]{1,64}$/.test(id)) {
    throw new CliError('invalid_request', `productId must match ^[A-Za-z0-9_-]{1,64}$, got "${id}"`);
  }
  return id;
}

/** Whole numbers only; ranges are the service's to check (it answers with the limit). */
export function integer(name: string, raw: string): number {
  if (!/^[+-]?\d+$/.test(raw.trim()))
    throw new CliError('invalid_request', `${name} must be an integer, got "${raw}"`);
  const n = Number(raw);
  if (!Number.isSafeInteger(n)) throw new CliError('invalid_request', `${name} is out of range: ${raw}`);
  return n;
}

/** The service's rule for a sale time (src/http/validation.ts): ISO 8601 with `Z` or an offset. */
const ZONED = z.iso.datetime({ offset: true });
const WITHOUT_ZONE = z.iso.datetime({ local: true });
const DATE_ONLY = z.iso.date();

/**
 * A sale time as the service takes it; otherwise a refusal naming the flag and what is missing
 * (the zone, the time of day), with the value mended as an example.
 */
export function saleTime(flag: string, raw: string): string {
  const v = raw.trim();
  if (ZONED.safeParse(v).success) return v;
  if (WITHOUT_ZONE.safeParse(v).success) {
    throw new CliError(
      'invalid_request',
      `${flag} "${raw}" has no time zone: add Z for UTC or an offset, e.g. ${v}Z or ${v}+01:00`,
    );
  }
  if (DATE_ONLY.safeParse(v).success) {
    throw new CliError(
      'invalid_request',
      `${flag} "${raw}" has no time of day nor zone, e.g. ${v}T10:00:00Z`,
    );
  }
  throw new CliError(
    'invalid_request',
    `${flag} must be an ISO 8601 time with a zone, e.g. 2026-12-01T10:00:00Z; got "${raw}"`,
  );
}
