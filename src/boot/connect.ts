// The first connections of a process, checked at boot: Redis (one server or a cluster), Postgres and
// the lock service of LOCK_BACKEND. A refusal is a StartupError whose line says what to fix.
import type { Kysely } from 'kysely';
import { redactUrl } from '../config/redact.ts';
import type { LocksSection, RedisSection } from '../config/sections.ts';
import { postgresProblem } from '../db/connect-problem.ts';
import { checkDatabase, type Database } from '../db/database.ts';
import { ExternalShardLocks } from '../inventory/shard-locks.ts';
import type { Metrics } from '../metrics.ts';
import { createRedisClient, type RedisClient, type RedisTarget } from '../redis/connection.ts';
import { StartupError } from './startup-error.ts';

/** The Redis of the configuration: the cluster of REDIS_CLUSTER_NODES, else the server of REDIS_URL. */
export function redisTarget(redis: RedisSection): RedisTarget {
  return redis.clusterNodes ? { nodes: redis.clusterNodes } : { url: redis.url };
}

/**
 * Redis connection for request work: fail fast (503) rather than queue commands while Redis is away.
 * On a single Redis it auto-pipelines: the commands of the requests served in one event-loop turn
 * leave in one socket write (a write per command was about a tenth of an order's API CPU). Scripts
 * run as EVALSHA/EVAL (typedScript.run), which every auto-pipeline carries; see
 * packages/lock/src/lua.ts for why. Not on a cluster: there an auto-pipeline mixes the slots of one
 * node, and while a slot migrates ioredis does not follow the ASK of the commands for that slot when
 * the others succeeded, so those orders failed with 500 (seen in CI, test/servers/cluster.orders).
 */
export async function connectRedis(target: RedisTarget, name: string): Promise<RedisClient> {
  const redis = createRedisClient(target, {
    maxRetriesPerRequest: 1,
    connectionName: name,
    lazyConnect: true,
    enableAutoPipelining: !('nodes' in target),
  });
  redis.on('error', () => {
    // ioredis reconnects by itself; requests meanwhile fail with 503 and /readyz reports it.
  });
  try {
    await redis.connect();
    await redis.ping();
  } catch (err) {
    redis.disconnect();
    throw new StartupError(redisProblem(target, err));
  }
  return redis;
}

/** The one line naming what to fix when Redis refused the first connection (never its password). */
function redisProblem(target: RedisTarget, err: unknown): string {
  const variable = 'nodes' in target ? 'REDIS_CLUSTER_NODES' : 'REDIS_URL';
  const at =
    'nodes' in target ? target.nodes.map((n) => `${n.host}:${n.port}`).join(',') : redactUrl(target.url);
  const message = err instanceof Error ? err.message : String(err);
  // Reachable, but the credentials are wrong or missing: starting Redis would not help.
  if (/WRONGPASS|NOAUTH|invalid password|invalid username-password/i.test(message)) {
    return `Redis at ${at} refused the login (${message.split('\n')[0]}): fix the user or password in ${variable}`;
  }
  return 'nodes' in target
    ? `Redis Cluster is unreachable at ${at}: start the cluster or set REDIS_CLUSTER_NODES`
    : `Redis is unreachable at ${at}: start redis-server or set REDIS_URL`;
}

/** Throws a StartupError naming what to fix when Postgres at `url` does not answer `db`'s probe. */
export async function checkPostgres(db: Kysely<Database>, url: string): Promise<void> {
  try {
    await checkDatabase(db);
  } catch (err) {
    throw new StartupError(postgresProblem(err, url));
  }
}

/** The shard locks' service of LOCK_BACKEND when it is not Redis; a clear startup error when unreachable. */
export async function connectLockService(
  locks: LocksSection,
  metrics: Metrics,
): Promise<ExternalShardLocks | undefined> {
  try {
    return await ExternalShardLocks.connect(locks, { onEvent: (e) => metrics.observeLock(e) });
  } catch (err) {
    const where = {
      redis: undefined,
      etcd: { service: 'etcd', at: locks.etcdEndpoints.join(','), variable: 'ETCD_ENDPOINTS' },
      zookeeper: { service: 'ZooKeeper', at: locks.zookeeperConnect, variable: 'ZOOKEEPER_CONNECT' },
    }[locks.backend];
    if (!where) throw err;
    throw new StartupError(
      `${where.service} is unreachable at ${where.at}: start ${where.service} or set ${where.variable} (LOCK_BACKEND=${locks.backend})`,
    );
  }
}
