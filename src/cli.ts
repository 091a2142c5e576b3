// The operator's CLI (`npx flashsale …`, `npm run admin -- …`): sale setup, restock, reshard, status
// and reconcile against a RUNNING service, over its admin HTTP API — so every change takes the same
// locks and writes the same audit row as any other admin call. Needs only Node: no service code here.
//
// Exit codes: 0 done; 1 reconcile found differences; 2 anything went wrong (usage, server, network),
// reported as one line on stderr: `error: <code>: <message>`.

import { realpathSync } from 'node:fs';
import { hostname, userInfo } from 'node:os';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';

const USAGE = `flashsale — admin CLI for a running flashsale service

Usage:
  flashsale sale put <productId> --stock <n> --shards <n> [--per-user-limit <n>]
  flashsale restock <productId> <delta>        add units (negative: remove, never below 0 left)
  flashsale reshard <productId> <shards>       move the remaining stock into <shards> new shards (1-1024)
  flashsale status <productId>                 available, sold, reserved, confirmed, total, each shard
  flashsale reconcile <productId>              check available + returning + sold == total and sold == reserved + confirmed + paid

Options:
  --json            print the service's JSON answer instead of text
  --url <url>       the service (default: $BASE_URL, else http://127.0.0.1:3000)
  --actor <name>    who you are, for the audit trail (default: cli:<user>@<host>)
  -h, --help        this text

Environment:
  ADMIN_TOKEN       the service's admin token (required)
  BASE_URL          the service's base URL

Exit status: 0 done, 1 reconcile found differences, 2 error (printed as "error: <code>: <message>").
Negative deltas may be written directly (restock shoe -5) or after "--" (restock shoe -- -5).
`;

const DEFAULT_URL = 'http://127.0.0.1:3000';
/** A reshard under load waits for the shard locks (the service allows it 30 s); leave room for that. */
const REQUEST_TIMEOUT_MS = 90_000;

export interface CliIo {
  out(text: string): void;
  err(text: string): void;
  env: NodeJS.ProcessEnv;
  fetch: typeof fetch;
}

const defaultIo: CliIo = {
  out: (t) => process.stdout.write(t),
  err: (t) => process.stderr.write(t),
  env: process.env,
  fetch: (...args) => fetch(...args),
};

/** A failure to report as `error: <code>: <message>` with exit status 2. */
class CliError extends Error {
  constructor(
    readonly code: string,
    message: string,
  ) {
    super(message);
  }
}

type Json = Record<string, unknown>;

interface Context {
  baseUrl: string;
  token: string;
  actor: string;
  json: boolean;
  io: CliIo;
}

/** Runs one command line (without `node` and the script); resolves to the exit status. */
export async function main(argv: string[], io: CliIo = defaultIo): Promise<number> {
  try {
    return await run(argv, io);
  } catch (err) {
    if (err instanceof CliError) {
      io.err(`error: ${err.code}: ${oneLine(err.message)}\n`);
      return 2;
    }
    io.err(`error: internal: ${oneLine(err instanceof Error ? err.message : String(err))}\n`);
    return 2;
  }
}

async function run(argv: string[], io: CliIo): Promise<number> {
  // A negative number is a value here (restock shoe -5), never an option.
  const NEGATIVE = /^-\d+$/;
  const MARK = '\u0000';
  const args = argv.map((a) => (NEGATIVE.test(a) ? `${MARK}${a}` : a));
  let parsed: ReturnType<typeof parseCommandLine>;
  try {
    parsed = parseCommandLine(args);
  } catch (err) {
    throw new CliError('usage', `${(err as Error).message} (see flashsale --help)`);
  }
  const unmark = (v: string) => (v.startsWith(MARK) ? v.slice(MARK.length) : v);
  const values = Object.fromEntries(
    Object.entries(parsed.values).map(([k, v]) => [k, typeof v === 'string' ? unmark(v) : v]),
  ) as typeof parsed.values;
  const positionals = parsed.positionals.map(unmark);
  if (values.help) {
    io.out(USAGE);
    return 0;
  }
  if (positionals.length === 0) {
    io.err(USAGE);
    return 2;
  }

  const [command, ...rest] = positionals;
  const ctx = (): Context => ({
    baseUrl: baseUrl(values.url ?? io.env.BASE_URL),
    token: adminToken(io.env.ADMIN_TOKEN),
    actor: values.actor ?? defaultActor(),
    json: values.json === true,
    io,
  });
  const only = (allowed: string[]) => {
    const given = (['stock', 'shards', 'per-user-limit'] as const).filter((o) => values[o] !== undefined);
    const stray = given.find((o) => !allowed.includes(o));
    if (stray) throw new CliError('usage', `--${stray} does not apply to "${command}"`);
  };

  switch (command) {
    case 'sale': {
      const [sub, productId, ...extra] = rest;
      if (sub !== 'put')
        throw new CliError('usage', 'expected "sale put <productId> --stock <n> --shards <n>"');
      only(['stock', 'shards', 'per-user-limit']);
      const id = product(productId, extra);
      if (values.stock === undefined || values.shards === undefined) {
        throw new CliError('usage', 'sale put needs --stock <n> and --shards <n>');
      }
      const body: Json = {
        stock: integer('--stock', values.stock),
        shards: integer('--shards', values.shards),
      };
      if (values['per-user-limit'] !== undefined) {
        body.perUserLimit = integer('--per-user-limit', values['per-user-limit']);
      }
      return salePut(ctx(), id, body);
    }
    case 'restock': {
      only([]);
      const [productId, delta, ...extra] = rest;
      const id = product(productId, extra);
      if (delta === undefined) throw new CliError('usage', 'restock needs <productId> <delta>');
      return restock(ctx(), id, integer('delta', delta));
    }
    case 'reshard': {
      only([]);
      const [productId, shards, ...extra] = rest;
      const id = product(productId, extra);
      if (shards === undefined) throw new CliError('usage', 'reshard needs <productId> <shards>');
      return reshard(ctx(), id, integer('shards', shards));
    }
    case 'status': {
      only([]);
      const [productId, ...extra] = rest;
      return status(ctx(), product(productId, extra));
    }
    case 'reconcile': {
      only([]);
      const [productId, ...extra] = rest;
      return reconcileCommand(ctx(), product(productId, extra));
    }
    default:
      throw new CliError('usage', `unknown command "${command}" (see flashsale --help)`);
  }
}

function parseCommandLine(args: string[]) {
  return parseArgs({
    args,
    allowPositionals: true,
    strict: true,
    options: {
      json: { type: 'boolean' },
      url: { type: 'string' },
      actor: { type: 'string' },
      help: { type: 'boolean', short: 'h' },
      stock: { type: 'string' },
      shards: { type: 'string' },
      'per-user-limit': { type: 'string' },
    },
  });
}

// --- commands ---

async function salePut(ctx: Context, productId: string, body: Json): Promise<number> {
  const { status, body: r } = await request(ctx, 'PUT', `/admin/products/${productId}`, body);
  if (ctx.json) return printJson(ctx, r);
  const verb = status === 201 ? 'created' : 'replaced';
  const limit = r.perUserLimit == null ? 'none' : String(r.perUserLimit);
  ctx.io.out(
    `${verb} sale "${productId}": total ${r.total}, available ${r.available}, ${r.shards} shards, ` +
      `generation ${r.generation}, per-user limit ${limit}\n`,
  );
  return 0;
}

async function restock(ctx: Context, productId: string, delta: number): Promise<number> {
  const { body: r } = await request(ctx, 'POST', `/admin/products/${productId}/restock`, { delta });
  if (ctx.json) return printJson(ctx, r);
  const signed = delta >= 0 ? `+${delta}` : String(delta);
  ctx.io.out(
    `restocked "${productId}" by ${signed}: total ${r.total}, available ${r.available}, generation ${r.generation}\n`,
  );
  return 0;
}

async function reshard(ctx: Context, productId: string, shards: number): Promise<number> {
  const started = performance.now();
  const { body: r } = await request(ctx, 'POST', `/admin/products/${productId}/reshard`, { shards });
  if (ctx.json) return printJson(ctx, r);
  const ms = Math.round(performance.now() - started);
  ctx.io.out(
    `resharded "${productId}" to ${r.shards} shards: generation ${r.generation}, available ${r.available} (${ms} ms)\n`,
  );
  return 0;
}

async function status(ctx: Context, productId: string): Promise<number> {
  const { body: r } = await request(ctx, 'GET', `/admin/products/${productId}`);
  if (ctx.json) return printJson(ctx, r);
  const shards = Array.isArray(r.shards) ? (r.shards as Json[]) : [];
  const limit = Number(r.perUserLimit ?? 0) > 0 ? String(r.perUserLimit) : 'none';
  const lines = [
    ['product', String(r.productId ?? productId)],
    ['generation', String(r.generation)],
    ['total', String(r.total)],
    ['available', String(r.available)],
    ['sold', `${r.sold} (reserved ${r.reserved} + confirmed ${r.confirmed})`],
    ['per-user limit', limit],
    ['shards', String(shards.length)],
  ];
  ctx.io.out(`${table(lines)}\n\n`);
  ctx.io.out(
    `${table([
      ['index', 'key', 'stock', 'sold'],
      ...shards.map((s) => [String(s.index), String(s.key), String(s.stock), String(s.sold ?? '')]),
    ])}\n`,
  );
  return 0;
}

async function reconcileCommand(ctx: Context, productId: string): Promise<number> {
  const { body: r } = await request(ctx, 'GET', `/admin/products/${productId}/reconcile`);
  const ok = r.ok === true;
  if (ctx.json) {
    printJson(ctx, r);
    return ok ? 0 : 1;
  }
  const { available, sold, total, reserved, confirmed } = r;
  if (ok) {
    ctx.io.out(
      `ok "${productId}": available ${available} + sold ${sold} == total ${total}; ` +
        `sold ${sold} == reserved ${reserved} + confirmed ${confirmed}\n`,
    );
    return 0;
  }
  const differences = Array.isArray(r.differences) ? (r.differences as Json[]) : [];
  ctx.io.out(`DIFFERENCES in "${productId}" (${differences.length}):\n`);
  for (const d of differences) {
    const off = Number(d.found) - Number(d.expected);
    ctx.io.out(
      `  ${d.check}: expected ${d.expected}, found ${d.found} (${off > 0 ? '+' : ''}${off}): ${d.detail}\n`,
    );
  }
  return 1;
}

// --- HTTP ---

async function request(
  ctx: Context,
  method: string,
  path: string,
  body?: Json,
): Promise<{ status: number; body: Json }> {
  const url = `${ctx.baseUrl}${path}`;
  let res: Response;
  try {
    res = await ctx.io.fetch(url, {
      method,
      headers: {
        authorization: `Bearer ${ctx.token}`,
        'x-admin-actor': ctx.actor,
        ...(body === undefined ? {} : { 'content-type': 'application/json' }),
      },
      body: body === undefined ? undefined : JSON.stringify(body),
      signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS),
    });
  } catch (err) {
    const e = err as Error & { cause?: { code?: string; message?: string } };
    const why =
      e.name === 'TimeoutError'
        ? `no answer within ${REQUEST_TIMEOUT_MS / 1000} s`
        : (e.cause?.code ?? e.cause?.message ?? e.message);
    throw new CliError(
      'unreachable',
      `cannot reach ${ctx.baseUrl} (${why}); is the service running? set BASE_URL or --url`,
    );
  }
  const text = await res.text();
  let parsed: unknown;
  try {
    parsed = text ? JSON.parse(text) : {};
  } catch {
    throw new CliError(`http_${res.status}`, `not a flashsale answer from ${url}: ${text.slice(0, 200)}`);
  }
  const json = (parsed && typeof parsed === 'object' ? parsed : {}) as Json;
  if (!res.ok) {
    const code = typeof json.error === 'string' ? json.error : `http_${res.status}`;
    const message =
      typeof json.message === 'string' ? json.message : `${method} ${path} answered ${res.status}`;
    throw new CliError(code, message);
  }
  return { status: res.status, body: json };
}

// --- helpers ---

function baseUrl(raw: string | undefined): string {
  const value = raw && raw.trim() !== '' ? raw.trim() : DEFAULT_URL;
  try {
    const u = new URL(value);
    if (u.protocol !== 'http:' && u.protocol !== 'https:') throw new Error('not http');
  } catch {
    throw new CliError('usage', `BASE_URL/--url must be an http(s) URL, got "${value}"`);
  }
  return value.replace(/\/+$/, '');
}

function adminToken(raw: string | undefined): string {
  if (!raw) throw new CliError('missing_token', "set ADMIN_TOKEN to the service's admin token");
  return raw;
}

function product(id: string | undefined, extra: string[]): string {
  if (id === undefined) throw new CliError('usage', 'missing <productId>');
  if (extra.length > 0) throw new CliError('usage', `unexpected argument "${extra[0]}"`);
  // The service checks the id too; checking here keeps a typo from becoming a strange URL.
  if (!/^[A-Za-z0-9_-]{1,64}$/.test(id)) {
    throw new CliError('invalid_request', `productId must match ^[A-Za-z0-9_-]{1,64}$, got "${id}"`);
  }
  return id;
}

/** Whole numbers only; ranges are the service's to check (it answers with the limit). */
function integer(name: string, raw: string): number {
  if (!/^[+-]?\d+$/.test(raw.trim()))
    throw new CliError('invalid_request', `${name} must be an integer, got "${raw}"`);
  const n = Number(raw);
  if (!Number.isSafeInteger(n)) throw new CliError('invalid_request', `${name} is out of range: ${raw}`);
  return n;
}

function defaultActor(): string {
  let user = 'unknown';
  try {
    user = userInfo().username;
  } catch {
    user = process.env.USER ?? process.env.USERNAME ?? 'unknown';
  }
  return `cli:${user}@${hostname()}`;
}

function printJson(ctx: Context, body: Json): number {
  ctx.io.out(`${JSON.stringify(body, null, 2)}\n`);
  return 0;
}

function table(rows: string[][]): string {
  const widths: number[] = [];
  for (const row of rows) {
    for (const [i, cell] of row.entries()) widths[i] = Math.max(widths[i] ?? 0, cell.length);
  }
  return rows
    .map((row) =>
      row.map((cell, i) => (i === row.length - 1 ? cell : cell.padEnd(widths[i] ?? 0))).join('  '),
    )
    .join('\n');
}

function oneLine(s: string): string {
  return s.replace(/\s+/g, ' ').trim();
}

/** True when this module is the program (tsx src/cli.ts), not imported (bin/flashsale.js, tests). */
function isEntryPoint(): boolean {
  const script = process.argv[1];
  if (!script) return false;
  try {
    return realpathSync(script) === realpathSync(fileURLToPath(import.meta.url));
  } catch {
    return false;
  }
}

if (isEntryPoint()) process.exitCode = await main(process.argv.slice(2));
