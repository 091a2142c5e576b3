// Configuration from the environment (DESIGN.md §6), validated once at start: a bad value stops the
// process with one line naming the variable, instead of failing later on the first request.
import { isIP } from 'node:net';
import os from 'node:os';
import { z } from 'zod';
import { type BuyerAuth, ConfigError, checkSecurity, isProduction, securityEnv } from './config-security.ts';

export { ConfigError };

/** The admin token of a development run (`npm start`); the CLI sends it when ADMIN_TOKEN is unset. */
export const DEV_ADMIN_TOKEN = 'dev-admin-token';
/** Signs waiting-room tickets in a development run only; any real deployment sets QUEUE_SECRET. */
const DEV_QUEUE_SECRET = 'dev-queue-secret-not-for-production';
/** A ticket signing key shorter than this is guessable. */
const MIN_QUEUE_SECRET = 32;

const int = (def: number, min: number, max: number) => z.coerce.number().int().min(min).max(max).default(def);

/**
 * A rate limit `<rate>:<burst>` (requests per second, bucket size; e.g. `5:10`), or `off`.
 * Parsed to undefined when off.
 */
const rateLimit = (def: string) =>
  z
    .string()
    .default(def)
    .transform((v, ctx) => {
      if (v === 'off') return undefined;
      const m = /^(\d+(?:\.\d+)?):(\d+)$/.exec(v);
      const rate = Number(m?.[1]);
      const burst = Number(m?.[2]);
      if (!m || !(rate > 0) || !(burst >= 1) || burst > 1_000_000) {
        ctx.addIssue({ code: 'custom', message: 'must be <requests per second>:<burst> (e.g. 5:10) or off' });
        return z.NEVER;
      }
      return { rate, burst };
    });

/** Named address ranges of Express' `trust proxy` (proxy-addr). */
const TRUST_PROXY_NAMES = new Set(['loopback', 'linklocal', 'uniquelocal']);

/** An address, address/prefix or range name of TRUST_PROXY. */
function trustedProxyEntry(entry: string): boolean {
  if (TRUST_PROXY_NAMES.has(entry)) return true;
  const [address, prefix, extra] = entry.split('/');
  const family = isIP(address ?? '');
  if (family === 0 || extra !== undefined) return false;
  if (prefix === undefined) return true;
  const bits = Number(prefix);
  return /^\d+$/.test(prefix) && bits <= (family === 4 ? 32 : 128);
}

/**
 * Every setting, by environment variable. Numbers are integers within the bounds shown; an empty
 * value means "not set". A value out of bounds stops the process at start with one line naming it.
 */
const schema = z.object({
  /** `production` (any case) is never a development run. Default `development`. */
  NODE_ENV: z.string().default('development'),
  /** Redis for stock, locks and the order queue. Default `redis://127.0.0.1:6379`. */
  REDIS_URL: z.string().url().default('redis://127.0.0.1:6379'),
  /**
   * Seed nodes `host:port,...` of a Redis Cluster: when set, everything runs on the cluster (with
   * REDIS_URL as well it is a configuration error). Unset: the single Redis of REDIS_URL.
   */
  REDIS_CLUSTER_NODES: z
    .string()
    .optional()
    .transform((v, ctx) => {
      if (v === undefined) return undefined;
      const nodes = v.split(',').map((entry) => {
        const m = /^([A-Za-z0-9.-]+|\[[0-9A-Fa-f:]+\]):(\d{1,5})$/.exec(entry.trim());
        const port = Number(m?.[2]);
        return m?.[1] && port >= 1 && port <= 65535 ? { host: m[1].replace(/^\[|\]$/g, ''), port } : null;
      });
      if (nodes.some((n) => n === null)) {
        ctx.addIssue({ code: 'custom', message: 'must be a comma-separated list of host:port' });
        return z.NEVER;
      }
      return nodes as { host: string; port: number }[];
    }),
  /**
   * Replicas that must have an accepted order's reservation before its 202 (Redis WAIT); 0 answers
   * without waiting (a failover may then lose the newest acknowledged orders). Default 0, 0..16.
   */
  REDIS_WAIT_REPLICAS: int(0, 0, 16),
  /** Longest WAIT for those replicas; an order not replicated in time answers 503. Default 500, 1..60000. */
  REDIS_WAIT_TIMEOUT_MS: int(500, 1, 60_000),
  /** Postgres for orders and the audit log. Default `postgres://postgres@127.0.0.1:5432/postgres`. */
  DATABASE_URL: z.string().url().default('postgres://postgres@127.0.0.1:5432/postgres'),
  /** HTTP port (API; the worker's /metrics). 0 picks a free port. Default 3000. */
  PORT: int(3000, 0, 65535),
  /** Address the HTTP server binds to. Default `0.0.0.0`. */
  HOST: z.string().default('0.0.0.0'),
  /** Bearer token of the admin endpoints; required unless FLASHSALE_DEV_RUN=1 (see loadConfig). */
  ADMIN_TOKEN: z.string().optional(),
  /** pino level; `debug` logs every order. Default `info`. */
  LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
  /**
   * The lock service that guards the shard decrements: `redis` (the stock's own Redis, one round
   * trip per order), `etcd` or `zookeeper` (their fencing tokens checked by the shard script). Default redis.
   */
  LOCK_BACKEND: z.enum(['redis', 'etcd', 'zookeeper']).default('redis'),
  /** etcd endpoints `http(s)://host:port,...` (LOCK_BACKEND=etcd). Default `http://127.0.0.1:2379`. */
  ETCD_ENDPOINTS: z
    .string()
    .default('http://127.0.0.1:2379')
    .transform((v, ctx) => {
      const endpoints = v.split(',').map((e) => e.trim());
      const bad = endpoints.find(
        (e) =>
          !/^https?:\/\/[A-Za-z0-9.-]+(:\d{1,5})?\/?$|^https?:\/\/\[[0-9A-Fa-f:]+\](:\d{1,5})?\/?$/.test(e),
      );
      if (bad !== undefined) {
        ctx.addIssue({ code: 'custom', message: `"${bad}" is not an http(s)://host:port endpoint` });
        return z.NEVER;
      }
      return endpoints;
    }),
  /** ZooKeeper connect string `host:port,...[/chroot]` (LOCK_BACKEND=zookeeper). Default `127.0.0.1:2181`. */
  ZOOKEEPER_CONNECT: z
    .string()
    .default('127.0.0.1:2181')
    .refine((v) => /^[A-Za-z0-9.-]+:\d{1,5}(,[A-Za-z0-9.-]+:\d{1,5})*(\/[^\s]*)?$/.test(v), {
      message: 'must be host:port[,host:port...][/chroot]',
    }),
  /** Lease of a shard lock held for one decrement (explicit: the critical section is one round trip). Default 5000, 100..600000. */
  LOCK_LEASE_MS: int(5000, 100, 600_000),
  /** How long an order waits for a busy shard's lock before answering 429. Default 2000, 0..60000. */
  LOCK_WAIT_MS: int(2000, 0, 60_000),
  /** Largest quantity one order may ask for. Default 100, 1..1000000. */
  MAX_ORDER_QUANTITY: int(100, 1, 1_000_000),
  /** Orders one API process sends to the writer in one BullMQ job at most. Default 64, 1..1000. */
  HANDOFF_MAX_BATCH: int(64, 1, 1000),
  /** Longest an accepted order waits for others to share its job (adds to its answer's latency). Default 2 ms, 0..1000. */
  HANDOFF_MAX_WAIT_MS: int(2, 0, 1000),
  /** Jobs the writer holds at once (the upper bound of a batch). Default 256, 1..10000. */
  WRITER_CONCURRENCY: int(256, 1, 10_000),
  /** Rows per INSERT. Default 128, 1..5000. */
  WRITER_BATCH_SIZE: int(128, 1, 5000),
  /** Longest a job waits for its batch to fill. Default 5 ms, 1..10000. */
  WRITER_BATCH_MS: int(5, 1, 10_000),
  /** BullMQ job lock: a killed writer's jobs are retaken within about WRITER_LOCK_MS + WRITER_STALLED_INTERVAL_MS. Default 10000, 1000..600000. */
  WRITER_LOCK_MS: int(10_000, 1000, 600_000),
  /** How often each writer looks for jobs whose lock lapsed. Default 5000, 100..600000. */
  WRITER_STALLED_INTERVAL_MS: int(5000, 100, 600_000),
  /** Reservations older than this with no Postgres row are re-enqueued by the sweeper; admin changes pending longer are finished. Default 5000. */
  SWEEP_AGE_MS: int(5000, 100, 3_600_000),
  /** Period of the sweeper and the admin-change recovery. Default 2000. */
  SWEEP_INTERVAL_MS: int(2000, 100, 3_600_000),
  /** The worker's periodic reconcile of every sale (flashsale_reconcile_differences); 0 switches it off. */
  RECONCILE_INTERVAL_MS: int(30_000, 0, 3_600_000),
  /**
   * Period of the expiry sweep (worker: every sale; API: the timed sales it has seen): unpaid orders past their deadline
   * expire, returned units go back on sale, decided fates reach Postgres. Default 1000.
   */
  EXPIRY_INTERVAL_MS: int(1000, 10, 3_600_000),
  /** Graceful-stop budget on SIGTERM/SIGINT. Default 10000, 0..600000. */
  SHUTDOWN_TIMEOUT_MS: int(10_000, 0, 600_000),
  /** API processes sharing PORT (node:cluster); `auto`: one per core. The writer stays one process. */
  API_WORKERS: z
    .string()
    .default('1')
    .transform((v, ctx) => {
      if (v === 'auto') return os.availableParallelism();
      const n = Number(v);
      if (!/^\d+$/.test(v) || n < 1 || n > 64) {
        ctx.addIssue({ code: 'custom', message: 'must be auto or an integer 1..64' });
        return z.NEVER;
      }
      return n;
    }),
  /**
   * Proxies whose X-Forwarded-For is believed (Express `trust proxy`): `false` (none: the client
   * address is the socket's), or a comma list of addresses, CIDRs and loopback/linklocal/uniquelocal.
   */
  TRUST_PROXY: z
    .string()
    .default('false')
    .transform((v, ctx) => {
      if (v === 'false') return false as const;
      const entries = v.split(',').map((e) => e.trim());
      const bad = entries.find((e) => !trustedProxyEntry(e));
      if (bad !== undefined) {
        ctx.addIssue({
          code: 'custom',
          message: `"${bad}" is not an address, CIDR or loopback/linklocal/uniquelocal (or set false)`,
        });
        return z.NEVER;
      }
      return entries;
    }),
  /** Orders per buyer (userId) in each API process: `<per second>:<burst>` or `off`. */
  RATE_LIMIT_PER_USER: rateLimit('off'),
  /** Orders per client address in each API process: `<per second>:<burst>` or `off`. */
  RATE_LIMIT_PER_IP: rateLimit('off'),
  /** Wrong admin tokens per client address: `<per second>:<burst>` or `off`; past it, 429 without a look at the token. */
  ADMIN_AUTH_FAILURES: rateLimit('0.1:10'),
  /** Admission control (src/http/admission.ts): the adaptive limit of orders in flight per process. */
  ADMISSION_LIMIT: int(128, 1, 100_000),
  ADMISSION_MIN_LIMIT: int(8, 1, 100_000),
  ADMISSION_MAX_LIMIT: int(1024, 1, 100_000),
  /** An admitted order slower than this is a congestion signal (the limit is cut). */
  ADMISSION_TARGET_MS: int(200, 1, 600_000),
  /** Longest wait for a slot in a burst; 0: no waiting at all. */
  ADMISSION_QUEUE_MS: int(1000, 0, 600_000),
  /** Longest wait once the queue has stood for ADMISSION_QUEUE_MS (sustained overload). */
  ADMISSION_OVERLOAD_QUEUE_MS: int(50, 0, 600_000),
  ADMISSION_MAX_QUEUE: int(1000, 0, 1_000_000),
  /** Mean event-loop delay above which nothing waits for a slot; 0: not watched. */
  ADMISSION_MAX_LAG_MS: int(100, 0, 60_000),
  /** Event-loop utilization (0..1) at or above which a herd (refusals >= completions) cuts the limit; 0: not watched. */
  ADMISSION_MAX_UTILIZATION: z.coerce.number().min(0).max(1).default(0.9),
  /**
   * The key that signs waiting-room tickets, shared by every API process of a deployment (at least
   * 32 characters); required outside a development run while WAITING_ROOM is on.
   */
  QUEUE_SECRET: z.string().optional(),
  /** `on`: under excess demand, orders are answered 429 queued and admitted first come, first served; `off`: 429 busy. */
  WAITING_ROOM: z.enum(['on', 'off']).default('on'),
  ...securityEnv,
});

/**
 * The validated configuration; `devToken` is true when the development admin token is in use,
 * `buyerAuth` is BUYER_AUTH with its development-run default applied.
 */
export type Config = Omit<z.infer<typeof schema>, 'ADMIN_TOKEN' | 'QUEUE_SECRET'> & {
  ADMIN_TOKEN: string;
  devToken: boolean;
  QUEUE_SECRET: string;
  buyerAuth: BuyerAuth;
};

/**
 * Reads and validates the configuration once, at start. Throws ConfigError with one line naming the
 * variable. Without ADMIN_TOKEN, only a development run (`FLASHSALE_DEV_RUN=1`, not in production)
 * starts, with the token `dev-admin-token`.
 *
 * @example
 * ```ts
 * const config = loadConfig({ ADMIN_TOKEN: 'a-long-secret-token', LOCK_WAIT_MS: '500' });
 * config.LOCK_WAIT_MS; // 500
 * config.REDIS_URL;    // 'redis://127.0.0.1:6379' (default)
 * ```
 */
export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  // Empty strings (VAR= in a compose file) mean "not set", so defaults apply.
  const cleaned = Object.fromEntries(Object.entries(env).filter(([, v]) => v !== ''));
  const parsed = schema.safeParse(cleaned);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    const name = issue?.path.join('.') ?? 'environment';
    throw new ConfigError(
      `invalid configuration: ${name}=${JSON.stringify(env[name] ?? '')}: ${issue?.message}`,
    );
  }
  const c = parsed.data;
  if (c.ADMISSION_MIN_LIMIT > c.ADMISSION_LIMIT || c.ADMISSION_LIMIT > c.ADMISSION_MAX_LIMIT) {
    throw new ConfigError(
      `invalid configuration: ADMISSION_MIN_LIMIT (${c.ADMISSION_MIN_LIMIT}) <= ADMISSION_LIMIT (${c.ADMISSION_LIMIT}) <= ADMISSION_MAX_LIMIT (${c.ADMISSION_MAX_LIMIT}) must hold`,
    );
  }
  if (c.REDIS_CLUSTER_NODES && cleaned.REDIS_URL !== undefined) {
    throw new ConfigError(
      'invalid configuration: set REDIS_URL (one Redis) or REDIS_CLUSTER_NODES (a Redis Cluster), not both',
    );
  }
  // Case-insensitive: `NODE_ENV=Production` is production, and never a development run.
  const production = isProduction(c.NODE_ENV);
  // The well-known development token only for a run that says it is one (`npm start` does).
  const devRun = !production && env.FLASHSALE_DEV_RUN === '1';
  const token = c.ADMIN_TOKEN ?? (devRun ? DEV_ADMIN_TOKEN : '');
  if (token === '' || (token === DEV_ADMIN_TOKEN && !devRun)) {
    throw new ConfigError(
      'invalid configuration: ADMIN_TOKEN must be set (or FLASHSALE_DEV_RUN=1 for a local run with the token "dev-admin-token")',
    );
  }
  const buyerAuth = checkSecurity({ ...c, ADMIN_TOKEN: token }, devRun);
  return {
    ...c,
    ADMIN_TOKEN: token,
    devToken: token === DEV_ADMIN_TOKEN,
    QUEUE_SECRET: queueSecret(c, devRun),
    buyerAuth,
  };
}

function queueSecret(c: z.infer<typeof schema>, devRun: boolean): string {
  const secret = c.QUEUE_SECRET ?? (devRun || c.WAITING_ROOM === 'off' ? DEV_QUEUE_SECRET : '');
  if (
    secret.length < MIN_QUEUE_SECRET ||
    (secret === DEV_QUEUE_SECRET && !devRun && c.WAITING_ROOM === 'on')
  ) {
    throw new ConfigError(
      `invalid configuration: QUEUE_SECRET must be a secret of at least ${MIN_QUEUE_SECRET} characters shared by every API process (or WAITING_ROOM=off, or FLASHSALE_DEV_RUN=1 for a local run)`,
    );
  }
  return secret;
}

/** The URL without its password, safe to print; `fallback` when it cannot be parsed. */
export function redactUrl(url: string, fallback = url): string {
  try {
    const u = new URL(url);
    if (u.password) u.password = '***';
    return u.toString();
  } catch {
    return fallback;
  }
}
