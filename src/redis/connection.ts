// The Redis the service runs on: one ioredis client for a single Redis (REDIS_URL) or for a Redis
// Cluster (REDIS_CLUSTER_NODES), and the few questions whose answer differs (nodes, slots, per-node scans).
import calculateSlot from 'cluster-key-slot';
import { Cluster, type ClusterOptions, Redis, type RedisOptions } from 'ioredis';

/** A connection to a single Redis or to a Redis Cluster; every module takes this. */
export type RedisClient = Redis | Cluster;

/** Where Redis is: the URL of one server, or the seed nodes of a cluster. */
export type RedisTarget = { url: string } | { nodes: readonly { host: string; port: number }[] };

/** How a target is written in messages (never with a password). */
export function describeTarget(target: RedisTarget): string {
  if ('nodes' in target)
    return `the Redis Cluster at ${target.nodes.map((n) => `${n.host}:${n.port}`).join(',')}`;
  try {
    const u = new URL(target.url);
    return `${u.hostname}:${u.port || 6379}`;
  } catch {
    return target.url;
  }
}

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

/** Another client to the same Redis (e.g. a subscriber), with these connection options on top. */
export function duplicateClient(redis: RedisClient, options: RedisOptions = {}): RedisClient {
  if (redis instanceof Cluster) {
    const { lazyConnect, ...redisOptions } = options;
    return redis.duplicate([], {
      ...redis.options,
      redisOptions: { ...redis.options.redisOptions, ...redisOptions },
      lazyConnect: lazyConnect ?? false,
    });
  }
  return redis.duplicate(options);
}

/** The address `host:port` of the master serving `key` (the one server of a single Redis). */
export function masterOf(redis: RedisClient, key: string): string {
  if (redis instanceof Cluster) return redis.slots[calculateSlot(key)]?.[0] ?? 'unknown';
  return `${redis.options.host}:${redis.options.port}`;
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

/** A pipeline commands of a batch are queued on. */
export type BatchPipeline = ReturnType<Redis['pipeline']>;

/** One command of a batch: a key it touches (its slot decides where it runs) and how to queue it. */
export interface BatchCommand {
  key: string;
  queue(pipeline: BatchPipeline): unknown;
}

/**
 * Runs commands that each touch one slot, in as few round trips as the deployment allows: one
 * pipeline on a single Redis, one pipeline per master (in parallel) on a cluster, where a pipeline
 * spanning masters is refused. Answers [error, reply] per command, in the order given. No ordering
 * between commands of different masters: a caller that needs one awaits between two batches.
 */
export async function runBatch(
  redis: RedisClient,
  commands: readonly BatchCommand[],
): Promise<[Error | null, unknown][]> {
  const groups = new Map<string, number[]>();
  commands.forEach((c, i) => {
    const node = redis instanceof Cluster ? masterOf(redis, c.key) : '';
    groups.set(node, [...(groups.get(node) ?? []), i]);
  });
  const replies: [Error | null, unknown][] = commands.map(() => [new Error('no reply'), null]);
  await Promise.all(
    [...groups.values()].map(async (indexes) => {
      const pipeline = redis.pipeline() as BatchPipeline;
      for (const i of indexes) commands[i]?.queue(pipeline);
      try {
        const out = (await pipeline.exec()) ?? [];
        indexes.forEach((i, k) => {
          replies[i] = (out[k] as [Error | null, unknown]) ?? [new Error('no reply'), null];
        });
      } catch (err) {
        for (const i of indexes) replies[i] = [err as Error, null];
      }
    }),
  );
  return replies;
}

/** Sends `message` on a channel: SPUBLISH on a cluster (delivered by the channel's slot), else PUBLISH. */
export function publish(redis: RedisClient, channel: string, message: string): Promise<unknown> {
  return redis instanceof Cluster ? redis.spublish(channel, message) : redis.publish(channel, message);
}

/** How long an SSUBSCRIBE may go unanswered before the slot map is re-read and it is sent again. */
const SSUBSCRIBE_ANSWER_MS = 1000;
const SSUBSCRIBE_ATTEMPTS = 5;
const UNANSWERED = Symbol('unanswered');

/**
 * Listens on channels: SSUBSCRIBE on a cluster, SUBSCRIBE on a single Redis. An SSUBSCRIBE sent to a
 * node that no longer serves the channel's slot (the subscriber's map is older than a migration) is
 * never answered by ioredis, so it is sent again after re-reading the map; sending it twice is harmless.
 */
export async function subscribe(subscriber: RedisClient, ...channels: string[]): Promise<unknown> {
  if (!(subscriber instanceof Cluster)) return subscriber.subscribe(...channels);
  for (let attempt = 1; ; attempt++) {
    let timer: NodeJS.Timeout | undefined;
    const unanswered = new Promise<typeof UNANSWERED>((resolve) => {
      timer = setTimeout(() => resolve(UNANSWERED), SSUBSCRIBE_ANSWER_MS);
    });
    const reply = await Promise.race([subscriber.ssubscribe(...channels), unanswered]).finally(() =>
      clearTimeout(timer),
    );
    if (reply !== UNANSWERED) return reply;
    if (attempt === SSUBSCRIBE_ATTEMPTS) {
      throw new Error(`SSUBSCRIBE ${channels.join(' ')} unanswered after ${attempt} attempts`);
    }
    await new Promise<void>((resolve) => subscriber.refreshSlotsCache(() => resolve()));
  }
}

export function unsubscribe(subscriber: RedisClient, ...channels: string[]): Promise<unknown> {
  return subscriber instanceof Cluster
    ? subscriber.sunsubscribe(...channels)
    : subscriber.unsubscribe(...channels);
}

/** Calls `listener` for every message on the subscriber's channels (sharded or not). */
export function onMessage(
  subscriber: RedisClient,
  listener: (channel: string, message: string) => void,
): void {
  subscriber.on(subscriber instanceof Cluster ? 'smessage' : 'message', listener);
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

/** True on a Redis Cluster (sharded pub/sub, per-master queues, salted shard tags). */
export function isCluster(redis: RedisClient): redis is Cluster {
  return redis instanceof Cluster;
}
