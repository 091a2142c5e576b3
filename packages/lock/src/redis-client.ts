// The Redis connection type the lock library takes (a single Redis or a Redis Cluster, ioredis) and the
// few operations whose form differs on a cluster: batches per master, (sharded) pub/sub, duplicates.
// ioredis is a peer used for its types only: the clients are the application's, of whichever ioredis
// (5 or 6) it installed, and the package never loads a second copy.
import calculateSlot from 'cluster-key-slot';
import type { Cluster, Redis, RedisOptions } from 'ioredis';

/** A connection to a single Redis or to a Redis Cluster, as the modules use it (ioredis' own types). */
export type RedisClient = Redis | Cluster;

/**
 * What the locks take: an ioredis `Redis` or `Cluster`, of ioredis 5 or 6 (any reply mapping). Typed by
 * shape, so the application's ioredis version, whichever it is, fits.
 */
export interface RedisConnection {
  readonly isCluster: boolean;
  readonly status: string;
  call(command: string, ...args: (string | number)[]): Promise<unknown>;
  defineCommand(name: string, definition: { lua: string; numberOfKeys?: number }): void;
  pipeline(): { exec(): Promise<unknown> };
  duplicate(): unknown;
  on(event: string, listener: (...args: unknown[]) => void): unknown;
}

/** The application's connection, seen through the ioredis types the modules are written against. */
export function clientOf(connection: RedisConnection): RedisClient {
  return connection as unknown as RedisClient;
}

/** Another client to the same Redis (e.g. a subscriber), with these connection options on top. */
export function duplicateClient(redis: RedisClient, options: RedisOptions = {}): RedisClient {
  if (isCluster(redis)) {
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
  if (isCluster(redis)) return redis.slots[calculateSlot(key)]?.[0] ?? 'unknown';
  return `${redis.options.host}:${redis.options.port}`;
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
    const node = isCluster(redis) ? masterOf(redis, c.key) : '';
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
  return isCluster(redis) ? redis.spublish(channel, message) : redis.publish(channel, message);
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
  if (!isCluster(subscriber)) return subscriber.subscribe(...channels);
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
  return isCluster(subscriber) ? subscriber.sunsubscribe(...channels) : subscriber.unsubscribe(...channels);
}

/** Calls `listener` for every message on the subscriber's channels (sharded or not). */
export function onMessage(
  subscriber: RedisClient,
  listener: (channel: string, message: string) => void,
): void {
  subscriber.on(isCluster(subscriber) ? 'smessage' : 'message', listener);
}

/** True on a Redis Cluster (sharded pub/sub, per-master queues, salted shard tags). */
export function isCluster(redis: RedisClient): redis is Cluster {
  // ioredis' own flag: a class test would fail on a client made by another copy of ioredis.
  return redis.isCluster === true;
}
