// Reads the environment once into typed sections (sections.ts) and checks what spans fields (admission
// limits, one Redis or a cluster, HTTP timeouts, the API's secrets and buyer auth). Pure: reads only env.
import { z } from 'zod';
import type { Variable } from './env-schema.ts';
import { ConfigError } from './errors.ts';
import { redactUrl } from './redact.ts';
import { type HttpSection, type ModeSection, type ParsedSections, SECTIONS } from './sections.ts';
import { type BuyerAuth, isProduction, KNOWN_ADMIN_TOKENS, MIN_ADMIN_TOKEN_LENGTH } from './security.ts';

/** The admin token of a development run (`npm start`); the CLI sends it when ADMIN_TOKEN is unset. */
export const DEV_ADMIN_TOKEN = 'dev-admin-token';
/** Signs waiting-room tickets in a development run only; any real deployment sets QUEUE_SECRET. */
const DEV_QUEUE_SECRET = 'dev-queue-secret-not-for-production';
/** A ticket signing key shorter than this is guessable. */
const MIN_QUEUE_SECRET = 32;

/** The admin routes' bearer token; `devToken` is true when the development token is in use. */
export interface AdminSection extends Omit<ParsedSections['admin'], 'token'> {
  token: string;
  devToken: boolean;
}

/** Who the buyer is: BUYER_AUTH with its development-run default applied. */
export interface BuyerSection {
  auth: BuyerAuth;
}

/** The waiting room: on or off, and the key that signs its tickets. */
export interface WaitingRoomSection {
  enabled: boolean;
  secret: string;
}

/** The validated configuration of a process that serves the API (main, api). */
export type Config = Omit<ParsedSections, 'admin' | 'waitingRoom' | 'buyer'> & {
  admin: AdminSection;
  waitingRoom: WaitingRoomSection;
  buyer: BuyerSection;
};
/**
 * The configuration of a process without the API (worker): no admin routes, waiting room or buyers,
 * so neither ADMIN_TOKEN, QUEUE_SECRET nor BUYER_AUTH is needed.
 */
export type WorkerConfig = Omit<Config, 'admin' | 'waitingRoom' | 'buyer' | 'buyerJwt' | 'payments'>;

type Env = Record<string, string | undefined>;

/** Empty strings (VAR= in a compose file) mean "not set", so defaults apply. */
function withoutEmpty(env: Env): Env {
  return Object.fromEntries(Object.entries(env).filter(([, v]) => v !== ''));
}

/** The variables of these sections parsed (defaults applied), each section's values under its name. */
function parseSections(env: Env, sections: Partial<Record<string, Record<string, Variable>>>) {
  const variables = Object.values(sections).flatMap((fields) => Object.values(fields ?? {}));
  const parsed = z.object(Object.fromEntries(variables.map((v) => [v.name, v.schema]))).safeParse(env);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    const name = String(issue?.path[0] ?? 'environment');
    throw new ConfigError(`${name}=${JSON.stringify(redactUrl(env[name] ?? ''))}: ${issue?.message}`);
  }
  const values = parsed.data as Record<string, unknown>;
  return Object.fromEntries(
    Object.entries(sections).map(([section, fields]) => [
      section,
      Object.fromEntries(Object.entries(fields ?? {}).map(([field, v]) => [field, values[v.name]])),
    ]),
  );
}

function checkAdmission({ minLimit, initialLimit, maxLimit }: ParsedSections['admission']): void {
  if (minLimit > initialLimit || initialLimit > maxLimit) {
    throw new ConfigError(
      `ADMISSION_MIN_LIMIT (${minLimit}) <= ADMISSION_LIMIT (${initialLimit}) <= ADMISSION_MAX_LIMIT (${maxLimit}) must hold`,
    );
  }
}

function checkRedis(redis: ParsedSections['redis'], env: Env): void {
  if (redis.clusterNodes && env.REDIS_URL !== undefined) {
    throw new ConfigError('set REDIS_URL (one Redis) or REDIS_CLUSTER_NODES (a Redis Cluster), not both');
  }
}

function checkHttp({ headersTimeoutMs, bodyTimeoutMs, requestTimeoutMs }: HttpSection): void {
  if (headersTimeoutMs >= requestTimeoutMs) {
    throw new ConfigError(
      `HTTP_HEADERS_TIMEOUT_MS (${headersTimeoutMs}) must be below HTTP_REQUEST_TIMEOUT_MS (${requestTimeoutMs})`,
    );
  }
  if (bodyTimeoutMs >= requestTimeoutMs) {
    throw new ConfigError(
      `HTTP_BODY_TIMEOUT_MS (${bodyTimeoutMs}) must be below HTTP_REQUEST_TIMEOUT_MS (${requestTimeoutMs})`,
    );
  }
}

/**
 * A development run: FLASHSALE_DEV_RUN=1 (`npm start`), never with NODE_ENV=production (compared
 * case-insensitively: `NODE_ENV=Production` is production too).
 */
function isDevRun({ nodeEnv, devRun }: ModeSection): boolean {
  return devRun && !isProduction(nodeEnv);
}

/**
 * The admin token. Without ADMIN_TOKEN only a development run (`FLASHSALE_DEV_RUN=1`, not in
 * production; `npm start` is one) starts, with the well-known token `dev-admin-token`. Outside a
 * development run the token is a secret: at least 32 characters, and none of the published ones.
 */
function adminSection({ token, ...rest }: ParsedSections['admin'], dev: boolean): AdminSection {
  const chosen = token ?? (dev ? DEV_ADMIN_TOKEN : '');
  if (chosen === '') {
    throw new ConfigError(
      'ADMIN_TOKEN must be set (or FLASHSALE_DEV_RUN=1 for a local run with the token "dev-admin-token")',
    );
  }
  if (!dev && KNOWN_ADMIN_TOKENS.has(chosen)) {
    throw new ConfigError(
      'ADMIN_TOKEN is a published default; set a secret of your own (e.g. openssl rand -hex 24)',
    );
  }
  if (!dev && chosen.length < MIN_ADMIN_TOKEN_LENGTH) {
    throw new ConfigError(
      `ADMIN_TOKEN must be a secret of at least ${MIN_ADMIN_TOKEN_LENGTH} characters outside a development run`,
    );
  }
  return { ...rest, token: chosen, devToken: chosen === DEV_ADMIN_TOKEN };
}

/**
 * BUYER_AUTH: explicit outside a development run (there `none`), with what its mode needs: one JWT
 * key for `jwt`, trusted proxies for `header` (X-Buyer-Id is believed only from them).
 */
function buyerSection(
  sections: Pick<ParsedSections, 'buyer' | 'buyerJwt' | 'http'>,
  dev: boolean,
): BuyerSection {
  const auth = sections.buyer.auth ?? (dev ? 'none' : undefined);
  if (auth === undefined) {
    throw new ConfigError(
      'BUYER_AUTH must be set to jwt, header or none outside a development run (FLASHSALE_DEV_RUN=1)',
    );
  }
  const { secret, publicKeyPem } = sections.buyerJwt;
  if (auth === 'jwt' && (secret === undefined) === (publicKeyPem === undefined)) {
    throw new ConfigError(
      'BUYER_AUTH=jwt needs exactly one of BUYER_JWT_SECRET (HS256) or BUYER_JWT_PUBLIC_KEY (RS256/ES256)',
    );
  }
  if (auth === 'header' && sections.http.trustProxy === false) {
    throw new ConfigError(
      'BUYER_AUTH=header needs TRUST_PROXY: X-Buyer-Id is believed only from those proxies',
    );
  }
  return { auth };
}

/** The ticket key: required (32+ characters) outside a development run while the room is on. */
function waitingRoomSection(
  { enabled, secret }: ParsedSections['waitingRoom'],
  dev: boolean,
): WaitingRoomSection {
  const chosen = secret ?? (dev || !enabled ? DEV_QUEUE_SECRET : '');
  if (chosen.length < MIN_QUEUE_SECRET || (chosen === DEV_QUEUE_SECRET && !dev && enabled)) {
    throw new ConfigError(
      `QUEUE_SECRET must be a secret of at least ${MIN_QUEUE_SECRET} characters shared by every API process (or WAITING_ROOM=off, or FLASHSALE_DEV_RUN=1 for a local run)`,
    );
  }
  return { enabled, secret: chosen };
}

/**
 * Reads and validates the configuration once, at start. Throws ConfigError with one line naming the
 * variable. A process without the API (`{ api: false }`: the worker) needs neither ADMIN_TOKEN,
 * QUEUE_SECRET nor BUYER_AUTH.
 *
 * @example
 * ```ts
 * const config = loadConfig({ ADMIN_TOKEN: 'a-long-secret-token', LOCK_WAIT_MS: '500' });
 * config.locks.waitMs; // 500
 * config.redis.url;    // 'redis://127.0.0.1:6379' (default)
 * ```
 */
export function loadConfig(env?: Env): Config;
export function loadConfig(env: Env, options: { api: false }): WorkerConfig;
export function loadConfig(env: Env = process.env, options = { api: true }): Config | WorkerConfig {
  const cleaned = withoutEmpty(env);
  const parsed = parseSections(cleaned, SECTIONS) as ParsedSections;
  const { admin, waitingRoom, buyer, buyerJwt, payments, ...sections } = parsed;
  checkAdmission(sections.admission);
  checkRedis(sections.redis, cleaned);
  checkHttp(sections.http);
  if (!options.api) return sections;
  const dev = isDevRun(sections.mode);
  return {
    ...sections,
    admin: adminSection(admin, dev),
    waitingRoom: waitingRoomSection(waitingRoom, dev),
    buyer: buyerSection(parsed, dev),
    buyerJwt,
    payments,
  };
}

/**
 * One section alone, for a tool that needs nothing else (the migration CLI reads `postgres`).
 *
 * @example
 * loadSection('postgres', {}).url; // 'postgres://postgres@127.0.0.1:5432/postgres'
 */
export function loadSection<N extends keyof ParsedSections>(
  name: N,
  env: Env = process.env,
): ParsedSections[N] {
  return parseSections(withoutEmpty(env), { [name]: SECTIONS[name] })[name] as ParsedSections[N];
}
