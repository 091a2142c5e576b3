// Boot, shared by the entry points (main = api + writer, api, worker): validated config, connections
// checked up front (one clear line when Redis, Postgres or the lock service is not there), migrations.
import type { Kysely } from 'kysely';
import { ConfigError } from '../config/errors.ts';
import { type Config, loadConfig, type WorkerConfig } from '../config/load.ts';
import { createDatabase, type Database } from '../db/database.ts';
import { migrateToLatest } from '../db/migrate.ts';
import type { ExternalShardLocks } from '../inventory/shard-locks.ts';
import { createLogger, type Logger } from '../log.ts';
import { createMetrics, type Metrics } from '../metrics.ts';
import type { RedisClient, RedisTarget } from '../redis/connection.ts';
import { checkPostgres, connectLockService, connectRedis, redisTarget } from './connect.ts';
import { startDevServices } from './dev/dev-services.ts';
import { StartupError } from './startup-error.ts';

/**
 * What boot made for an entry point. `C` is WorkerConfig for a process without the API (it needed
 * no ADMIN_TOKEN or QUEUE_SECRET), Config otherwise.
 */
export interface Runtime<C extends WorkerConfig = Config> {
  config: C;
  logger: Logger;
  metrics: Metrics;
  redis: RedisClient;
  /** Where Redis is (REDIS_URL or REDIS_CLUSTER_NODES): BullMQ objects connect to it on their own. */
  target: RedisTarget;
  db: Kysely<Database>;
  /** The shard locks' service when LOCK_BACKEND is etcd or zookeeper (connected at boot). */
  lockService: ExternalShardLocks | undefined;
  /** What shutdown() closes, last pushed first: each part pushes its own as it starts. */
  closers: Array<() => Promise<unknown>>;
  /** The servers a development run started for itself (src/boot/dev), stopped after everything else. */
  devServers: Array<() => Promise<void>>;
}

/** Reads the config (the API's secrets only where `api`); a refusal is a StartupError. */
function readConfig(env: NodeJS.ProcessEnv, api: boolean): Config | WorkerConfig {
  try {
    return api ? loadConfig(env) : loadConfig(env, { api: false });
  } catch (err) {
    throw err instanceof ConfigError ? new StartupError(err.message) : err;
  }
}

/**
 * Config, connections checked, migrations: what every entry point needs before it starts its part.
 * `name` names the Redis connection (`flashsale-<name>`). `{ api: false }` (the worker) boots without
 * the API's secrets (ADMIN_TOKEN, QUEUE_SECRET). `{ devServers: true }` (`npm start`'s process) may
 * start a private Redis and an embedded Postgres where nothing answers at the defaults (src/boot/dev).
 *
 * @example
 * const rt = await boot('worker', process.env, { api: false });
 */
export async function boot(
  name: string,
  env?: NodeJS.ProcessEnv,
  options?: { devServers?: boolean },
): Promise<Runtime>;
export async function boot(
  name: string,
  env: NodeJS.ProcessEnv,
  options: { api: false },
): Promise<Runtime<WorkerConfig>>;
export async function boot(
  name: string,
  env: NodeJS.ProcessEnv = process.env,
  { api = true, devServers = false }: { api?: boolean; devServers?: boolean } = {},
): Promise<Runtime<Config | WorkerConfig>> {
  const config = readConfig(env, api);
  const logger = createLogger(config.log.level);
  if ('admin' in config && config.admin.devToken)
    logger.warn('ADMIN_TOKEN not set: using the development token "dev-admin-token"');
  // Where nothing answers at the default URLs, a development run starts its own servers (`npm start`).
  const dev = devServers ? await startDevServices(config, env) : [];
  const target = redisTarget(config.redis);
  const redis = await connectRedis(target, `flashsale-${name}`);
  const db = createDatabase(config.postgres.url);
  const metrics = createMetrics();
  let lockService: ExternalShardLocks | undefined;
  try {
    await checkPostgres(db, config.postgres.url);
    // Before anything is written: a start refused for an unreachable lock service changes nothing.
    lockService = await connectLockService(config.locks, metrics);
  } catch (err) {
    redis.disconnect();
    await db.destroy().catch(() => {});
    throw err;
  }
  // Several instances may start at once: the migrator takes a lock in Postgres.
  await migrateToLatest(db);
  // Closers run last-pushed first: the lock service closes after everything that uses it.
  const closers: Array<() => Promise<unknown>> = lockService ? [async () => lockService.close()] : [];
  return { config, logger, metrics, redis, target, db, lockService, closers, devServers: dev };
}
