// The commands by name: each checks its own arguments and options before anything is sent, and returns
// the run that calls the admin API (so a usage error never needs the service or a token).

import {
  type CommandLine,
  didYouMean,
  integer,
  onlyOptions,
  product,
  SALE_OPTIONS,
  saleTime,
} from './args.ts';
import { reshard, restock, salePut } from './changes.ts';
import { CliError } from './cli-error.ts';
import type { Context, Json } from './client.ts';
import { reconcile, status } from './reports.ts';

export type Run = (ctx: Context) => Promise<number>;
type Command = (args: string[], options: CommandLine['sale']) => Run;

const COMMANDS: Record<string, Command> = {
  sale([sub, productId, ...extra], options) {
    if (sub !== 'put')
      throw new CliError('usage', 'expected "sale put <productId> --stock <n> --shards <n>"');
    onlyOptions('sale', options, SALE_OPTIONS);
    const id = product(productId, extra);
    const body = saleBody(options);
    return (ctx) => salePut(ctx, id, body);
  },
  restock(args, options) {
    const [id, delta] = productAndInteger('restock', 'delta', args, options);
    return (ctx) => restock(ctx, id, delta);
  },
  reshard(args, options) {
    const [id, shards] = productAndInteger('reshard', 'shards', args, options);
    return (ctx) => reshard(ctx, id, shards);
  },
  status([productId, ...extra], options) {
    onlyOptions('status', options, []);
    const id = product(productId, extra);
    return (ctx) => status(ctx, id);
  },
  reconcile([productId, ...extra], options) {
    onlyOptions('reconcile', options, []);
    const id = product(productId, extra);
    return (ctx) => reconcile(ctx, id);
  },
};

/** The run of a command line's command, its arguments checked. */
export function command([name = '', ...args]: string[], options: CommandLine['sale']): Run {
  const parse = Object.hasOwn(COMMANDS, name) ? COMMANDS[name] : undefined;
  if (!parse) {
    const hint = name === '' ? '' : didYouMean(name, Object.keys(COMMANDS));
    throw new CliError('usage', `unknown command "${name}"${hint}; see flashsale --help`);
  }
  return parse(args, options);
}

/** The arguments `<productId> <name>` of a command taking a whole number, and no option. */
function productAndInteger(
  command: string,
  name: string,
  [productId, raw, ...extra]: string[],
  options: CommandLine['sale'],
): [string, number] {
  onlyOptions(command, options, []);
  const id = product(productId, extra);
  if (raw === undefined) throw new CliError('usage', `${command} needs <productId> <${name}>`);
  return [id, integer(name, raw)];
}

/** The PUT body of `sale put`: DESIGN.md §4's sale, each value checked as far as the CLI can tell. */
function saleBody(o: CommandLine['sale']): Json {
  if (o.stock === undefined || o.shards === undefined) {
    throw new CliError('usage', 'sale put needs --stock <n> and --shards <n>');
  }
  const optional = (raw: string | undefined, read: (v: string) => unknown) =>
    raw === undefined ? undefined : read(raw);
  const lottery = optional(o['lottery-seconds'], (v) => integer('--lottery-seconds', v));
  return {
    stock: integer('--stock', o.stock),
    shards: integer('--shards', o.shards),
    perUserLimit: optional(o['per-user-limit'], (v) => integer('--per-user-limit', v)),
    startsAt: optional(o['starts-at'], (v) => saleTime('--starts-at', v)),
    endsAt: optional(o['ends-at'], (v) => saleTime('--ends-at', v)),
    paymentTimeoutSec: optional(o['payment-timeout'], (v) => integer('--payment-timeout', v)),
    queue: lottery === undefined ? undefined : { lotterySeconds: lottery },
  };
}
