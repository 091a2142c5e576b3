// The Redis the service runs on: one ioredis client for a single Redis (REDIS_URL) or for a Redis
// Cluster (REDIS_CLUSTER_NODES), and the few questions whose answer differs (nodes, slots, per-node scans).

import { masterOf, type RedisClient } from '@flashsale/lock/toolkit';
import { Cluster, type ClusterOptions, Redis, type RedisOptions } from 'ioredis';

// The lock package owns the connection helpers it needs; the service uses the same ones.
export {
  type BatchCommand,
  type BatchPipeline,
  duplicateClient,
  isCluster,
  masterOf,
  onMessage,
  publish,
  type RedisClient,
  runBatch,
  subscribe,
  unsubscribe,
} from '@flashsale/lock/toolkit';

/** Where Redis is: the URL of one server, or the seed nodes of a cluster. */
export type RedisTarget = { url: string } | { nodes: readonly { host: string; port: number }[] };

/**
 * Cluster options shared by every cluster client. Sharded pub/sub (SSUBSCRIBE) is on, so lock
 * wake-ups and sale events are delivered by the master of their slot instead of broadcast over the
 * cluster bus. `retryDelayOnFailover`/`OnClusterDown` keep a command waiting briefly while a replica
 * takes over, and MOVED/ASK during a slot migration are followed by ioredis.
 */
function clusterOptions(redisOptions: RedisOptions, extra: Partial<ClusterOptions> = {}): ClusterOptions {
  return {
    shardedSubscribers: true,
    scaleReads: 'master',
    retryDelayOnFailover: 100,
    retryDelayOnClusterDown: 100,
    retryDelayOnTryAgain: 50,
    maxRedirections: 32,
    slotsRefreshTimeout: 2000,
    // A client that only subscribes never gets a MOVED to learn that a slot moved; re-reading the
    // map regularly lets its sharded subscriptions follow (ioredis resubscribes on a change).
    slotsRefreshInterval: 2000,
    redisOptions,
    ...extra,
  };
}

/**
 * A client of the target with these connection options (lazyConnect, connectionName, retries...).
 *
 * @example
 * ```ts
 * const redis = createRedisClient({ nodes: [{ host: '127.0.0.1', port: 7000 }] }, { maxRetriesPerRequest: 1 });
 * ```
 */
export function createRedisClient(target: RedisTarget, options: RedisOptions = {}): RedisClient {
  if ('nodes' in target) {
    const { lazyConnect, ...redisOptions } = options;
    return new Cluster(
      [...target.nodes],
      clusterOptions(redisOptions, { lazyConnect: lazyConnect ?? false }),
    );
  }
  return new Redis(target.url, options);
}

/** The masters' addresses, sorted (one for a single Redis). */
export function masters(redis: RedisClient): string[] {
  if (!(redis instanceof Cluster)) return [masterOf(redis, '')];
  return [...new Set(redis.slots.map((nodes) => nodes[0]).filter((n): n is string => !!n))].sort();
}

/** The master connections to ask about every key (SCAN), one per master. */
export function masterClients(redis: RedisClient): Redis[] {
  return redis instanceof Cluster ? redis.nodes('master') : [redis];
}

/** The client that runs commands on `key`'s master (where WAIT must be sent after writing it). */
export function clientOf(redis: RedisClient, key: string): Redis {
  if (!(redis instanceof Cluster)) return redis;
  const address = masterOf(redis, key);
  const node = redis.nodes('master').find((n) => `${n.options.host}:${n.options.port}` === address);
  if (!node) throw new Error(`no connection to the master ${address} of ${key}`);
  return node;
}

/** Every key matching `match` (of `type`, if given) on every master, a SCAN page at a time. */
export async function* scanKeys(
  redis: RedisClient,
  match: string,
  options: { type?: string; count?: number } = {},
): AsyncIterable<string[]> {
  for (const node of masterClients(redis)) {
    const stream = options.type
      ? node.scanStream({ match, type: options.type, count: options.count ?? 500 })
      : node.scanStream({ match, count: options.count ?? 500 });
    for await (const keys of stream as AsyncIterable<string[]>) yield keys;
  }
}

/** A fingerprint of the cluster's slot → master map as this client knows it (changes when a slot moves). */
export function slotMapOf(cluster: Cluster): string {
  let map = '';
  let last: string | undefined;
  cluster.slots.forEach((nodes, slot) => {
    if (nodes[0] !== last) map += `${slot}=${nodes[0]};`;
    last = nodes[0];
  });
  return map;
}
