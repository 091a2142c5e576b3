// Reads the environment once into typed sections (sections.ts) and checks what spans fields (admission
// limits, one Redis or a cluster, HTTP timeouts, the API's secrets and buyer auth). Pure: reads only env.
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
  /** Streams each API process holds for waiting buyers (WAITING_ROOM_MAX_STREAMS). */
  maxStreams: number;
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

/**
 * The sections whose variables all parse (defaults applied), each section's values under its name;
 * every bad variable's problem (in the schema's words, with its value) goes to `problems`.
 */
function parseSections(
  env: Env,
  sections: Partial<Record<string, Record<string, Variable>>>,
  problems: string[],
): Partial<ParsedSections> {
  const out: Record<string, unknown> = {};
  for (const [section, fields] of Object.entries(sections)) {
    const values: Record<string, unknown> = {};
    let ok = true;
    for (const [field, v] of Object.entries(fields ?? {})) {
      const parsed = v.schema.safeParse(env[v.name]);
      if (parsed.success) values[field] = parsed.data;
      else {
        ok = false;
        problems.push(
          `${v.name}=${JSON.stringify(redactUrl(env[v.name] ?? ''))}: ${parsed.error.issues[0]?.message}`,
        );
      }
    }
    if (ok) out[section] = values;
  }
  return out as Partial<ParsedSections>;
}

/** Runs a check, recording its refusal in `problems` instead of stopping at it; undefined then. */
function collect<T>(problems: string[], check: () => T): T | undefined {
  try {
    return check();
  } catch (err) {
    if (!(err instanceof ConfigError)) throw err;
    problems.push(...err.problems);
    return undefined;
  }
}

/**
 * The line after the problems when a secret that a development run would not need is missing: what
 * production needs (FLASHSALE_DEV_RUN is ignored there), or how to make a local run.
 */
function secretsHint(problems: string[], mode: ModeSection | undefined): string | undefined {
  if (!problems.some((p) => /^(ADMIN_TOKEN|QUEUE_SECRET|BUYER_AUTH) must be set/.test(p))) return undefined;
  return mode && isProduction(mode.nodeEnv)
    ? 'Production needs ADMIN_TOKEN, QUEUE_SECRET (or WAITING_ROOM=off) and BUYER_AUTH, whatever FLASHSALE_DEV_RUN says'
    : 'A local run needs none of them with FLASHSALE_DEV_RUN=1 (npm start sets it)';
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
export function isDevRun({ nodeEnv, devRun }: ModeSection): boolean {
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
      `ADMIN_TOKEN must be set: a secret of at least ${MIN_ADMIN_TOKEN_LENGTH} characters`,
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
    throw new ConfigError('BUYER_AUTH must be set outside a development run: jwt, header or none');
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
  { enabled, secret, maxStreams }: ParsedSections['waitingRoom'],
  dev: boolean,
): WaitingRoomSection {
  const chosen = secret ?? (dev || !enabled ? DEV_QUEUE_SECRET : '');
  if (chosen === '') {
    throw new ConfigError(
      `QUEUE_SECRET must be set: a secret of at least ${MIN_QUEUE_SECRET} characters shared by every API process (or WAITING_ROOM=off)`,
    );
  }
  if (chosen.length < MIN_QUEUE_SECRET || (chosen === DEV_QUEUE_SECRET && !dev && enabled)) {
    throw new ConfigError(
      `QUEUE_SECRET must be a secret of at least ${MIN_QUEUE_SECRET} characters shared by every API process (or WAITING_ROOM=off)`,
    );
  }
  return { enabled, secret: chosen, maxStreams };
}

/**
 * Reads and validates the configuration once, at start. Throws ConfigError with one line naming
 * every missing or bad variable and what it must be (not only the first). A process without the API (`{ api: false }`: the worker) needs neither ADMIN_TOKEN,
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
  const problems: string[] = [];
  const { admin, waitingRoom, buyer, buyerJwt, payments, ...rest } = parseSections(
    cleaned,
    SECTIONS,
    problems,
  );
  const { mode, http, redis, admission } = rest;
  if (admission) collect(problems, () => checkAdmission(admission));
  if (redis) collect(problems, () => checkRedis(redis, cleaned));
  if (http) collect(problems, () => checkHttp(http));
  // Every check runs on what parsed, so one start reports every problem (issue 43).
  const dev = mode !== undefined && isDevRun(mode);
  const api = options.api && {
    admin: admin && collect(problems, () => adminSection(admin, dev)),
    waitingRoom: waitingRoom && collect(problems, () => waitingRoomSection(waitingRoom, dev)),
    buyer: buyer && buyerJwt && http && collect(problems, () => buyerSection({ buyer, buyerJwt, http }, dev)),
    buyerJwt,
    payments,
  };
  if (problems.length > 0) throw new ConfigError(problems, secretsHint(problems, mode));
  const sections = rest as Omit<ParsedSections, 'admin' | 'waitingRoom' | 'buyer' | 'buyerJwt' | 'payments'>;
  return api ? ({ ...sections, ...api } as Config) : sections;
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
  const problems: string[] = [];
  const parsed = parseSections(withoutEmpty(env), { [name]: SECTIONS[name] }, problems);
  if (problems.length > 0) throw new ConfigError(problems);
  return parsed[name] as ParsedSections[N];
}
