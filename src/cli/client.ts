// The admin API as the CLI calls it: where the service is and who calls (token, actor for the audit
// trail), and one request that turns every failure into a CliError carrying the service's own code.

import { hostname, userInfo } from 'node:os';
import { DEV_ADMIN_TOKEN } from '../config/load.ts';
import type { CommandLine } from './args.ts';
import { CliError } from './cli-error.ts';

const DEFAULT_URL = 'http://127.0.0.1:3000';
/** A reshard under load waits for the shard locks (the service allows it 30 s); leave room for that. */
const REQUEST_TIMEOUT_MS = 90_000;

/** Where the CLI writes, reads its environment and sends requests (a test passes its own). */
export interface CliIo {
  out(text: string): void;
  err(text: string): void;
  env: NodeJS.ProcessEnv;
  fetch: typeof fetch;
}

export type Json = Record<string, unknown>;

export interface Context {
  baseUrl: string;
  token: string;
  /** ADMIN_TOKEN was unset: the token is the development one, which a real service refuses. */
  devToken: boolean;
  actor: string;
  json: boolean;
  io: CliIo;
}

export function context(line: CommandLine, io: CliIo): Context {
  const token = io.env.ADMIN_TOKEN;
  return {
    baseUrl: baseUrl(line.url ?? io.env.BASE_URL),
    token: token || DEV_ADMIN_TOKEN,
    devToken: !token,
    actor: line.actor ?? defaultActor(),
    json: line.json,
    io,
  };
}

/** One admin call: the answer's status and JSON body when it succeeded, else a CliError. */
export async function request(
  ctx: Context,
  method: string,
  path: string,
  body?: Json,
): Promise<{ status: number; body: Json }> {
  const url = `${ctx.baseUrl}${path}`;
  const res = await send(ctx, url, method, body);
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
    let message =
      typeof json.message === 'string' ? json.message : `${method} ${path} answered ${res.status}`;
    if (ctx.devToken && (res.status === 401 || res.status === 403)) {
      message += ' (ADMIN_TOKEN is not set, so the CLI sent the development token: set ADMIN_TOKEN)';
    }
    throw new CliError(code, message, typeof json.field === 'string' ? json.field : undefined);
  }
  return { status: res.status, body: json };
}

/** Sends the request; a network failure or timeout is `unreachable`. */
async function send(ctx: Context, url: string, method: string, body?: Json): Promise<Response> {
  try {
    return await ctx.io.fetch(url, {
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
}

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

function defaultActor(): string {
  let user = 'unknown';
  try {
    user = userInfo().username;
  } catch {
    user = process.env.USER ?? process.env.USERNAME ?? 'unknown';
  }
  return `cli:${user}@${hostname()}`;
}
