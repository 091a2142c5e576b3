// Configuration from the environment (DESIGN.md §6), validated once at start: a bad value stops the
// process with one line naming the variable, instead of failing later on the first request.
import { z } from 'zod';

const DEV_ADMIN_TOKEN = 'dev-admin-token';

const int = (def: number, min: number, max: number) => z.coerce.number().int().min(min).max(max).default(def);

const schema = z.object({
  NODE_ENV: z.string().default('development'),
  REDIS_URL: z.string().url().default('redis://127.0.0.1:6379'),
  DATABASE_URL: z.string().url().default('postgres://postgres@127.0.0.1:5432/postgres'),
  PORT: int(3000, 0, 65535),
  HOST: z.string().default('0.0.0.0'),
  ADMIN_TOKEN: z.string().optional(),
  LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
  /** Lease of a shard lock held for one decrement (explicit: the critical section is one round trip). */
  LOCK_LEASE_MS: int(5000, 100, 600_000),
  /** How long an order waits for a busy shard's lock before answering 429. */
  LOCK_WAIT_MS: int(2000, 0, 60_000),
  /** Largest quantity one order may ask for. */
  MAX_ORDER_QUANTITY: int(100, 1, 1_000_000),
  WRITER_CONCURRENCY: int(256, 1, 10_000),
  WRITER_BATCH_SIZE: int(128, 1, 5000),
  WRITER_BATCH_MS: int(5, 1, 10_000),
  /** BullMQ job lock: a killed writer's jobs are retaken within about WRITER_LOCK_MS + WRITER_STALLED_INTERVAL_MS. */
  WRITER_LOCK_MS: int(10_000, 1000, 600_000),
  WRITER_STALLED_INTERVAL_MS: int(5000, 100, 600_000),
  /** Reservations older than this with no Postgres row are re-enqueued by the sweeper. */
  SWEEP_AGE_MS: int(5000, 100, 3_600_000),
  SWEEP_INTERVAL_MS: int(2000, 100, 3_600_000),
  /** The worker's periodic reconcile of every sale (flashsale_reconcile_differences); 0 switches it off. */
  RECONCILE_INTERVAL_MS: int(30_000, 0, 3_600_000),
  SHUTDOWN_TIMEOUT_MS: int(10_000, 0, 600_000),
  /** Benchmark-only endpoints under /bench (src/http/bench-routes.ts): `npm run bench` only, never in production. */
  BENCH_ENDPOINTS: z
    .enum(['0', '1', 'false', 'true'])
    .default('0')
    .transform((v) => v === '1' || v === 'true'),
});

export type Config = Omit<z.infer<typeof schema>, 'ADMIN_TOKEN'> & { ADMIN_TOKEN: string; devToken: boolean };

export class ConfigError extends Error {}

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
  const production = c.NODE_ENV === 'production';
  // The well-known development token only for a run that says it is one (`npm start` does).
  const devRun = !production && env.FLASHSALE_DEV_RUN === '1';
  const token = c.ADMIN_TOKEN ?? (devRun ? DEV_ADMIN_TOKEN : '');
  if (token === '' || (token === DEV_ADMIN_TOKEN && !devRun)) {
    throw new ConfigError(
      'invalid configuration: ADMIN_TOKEN must be set (or FLASHSALE_DEV_RUN=1 for a local run with the token "dev-admin-token")',
    );
  }
  if (production && token.length < 16) {
    throw new ConfigError(
      'invalid configuration: ADMIN_TOKEN must be a secret of at least 16 characters when NODE_ENV=production',
    );
  }
  return { ...c, ADMIN_TOKEN: token, devToken: token === DEV_ADMIN_TOKEN };
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
