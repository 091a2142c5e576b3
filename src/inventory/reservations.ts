// The shards' reservation hashes (the outbox): each entry is written by reserve.lua with the units it
// takes, and deleted once its order is persisted. Everything that reads or clears them goes through here.
import { performance } from 'node:perf_hooks';
import {
  type BatchPipeline,
  masterClients,
  type RedisClient,
  runBatch,
  scanKeys,
} from '../redis/connection.ts';
import {
  parseShardKey,
  RESERVATION_HASHES,
  retiredShardsKey,
  type ShardRef,
  shardKeys,
  shardListKey,
} from './keys.ts';

/**
 * The reservation `id` on a shard of a known place (product, generation, index); null when absent.
 * The place names the shard but not its key (on a cluster the key's tag carries a placement salt), so
 * the key is looked up among the product's current and retired shards.
 */
export async function readReservation(
  redis: RedisClient,
  shard: Omit<ShardRef, 'key'>,
  id: string,
): Promise<string | null> {
  return findReservation(redis, shard.productId, (s) =>
    s.generation === shard.generation && s.index === shard.index ? id : null,
  );
}

/**
 * Looks for a reservation on every shard of the product that may still hold one: the current ones and
 * the retired ones whose reservations are not all persisted yet. `idOn` names the entry to look for on
 * each shard (null: none there). Answers the first entry found.
 */
export async function findReservation(
  redis: RedisClient,
  productId: string,
  idOn: (shard: ShardRef) => string | null,
): Promise<string | null> {
  const [listed, retired] = await Promise.all([
    redis.lrange(shardListKey(productId), 0, -1),
    redis.smembers(retiredShardsKey(productId)),
  ]);
  const lookups = [...new Set([...listed, ...retired])].flatMap((key) => {
    const shard = parseShardKey(key);
    const id = shard && idOn(shard);
    const hash = shardKeys(key).reservations;
    return id ? [{ key: hash, queue: (p: BatchPipeline) => p.hget(hash, id) }] : [];
  });
  for (const [err, json] of await runBatch(redis, lookups)) {
    if (err) throw err;
    if (typeof json === 'string') return json;
  }
  return null;
}

/** Deletes reservations (their orders are persisted); answers how many deletions failed. */
export async function deleteReservations(
  redis: RedisClient,
  entries: readonly { shardKey: string; id: string }[],
): Promise<number> {
  if (entries.length === 0) return 0;
  const replies = await runBatch(
    redis,
    entries.map((e) => {
      const hash = shardKeys(e.shardKey).reservations;
      return { key: hash, queue: (p) => p.hdel(hash, e.id) };
    }),
  );
  return replies.filter(([err]) => err).length;
}

/** The ids among `entries` whose reservation is still in its shard's hash (HEXISTS, batched per master). */
export async function presentReservations(
  redis: RedisClient,
  entries: readonly { shardKey: string; id: string }[],
): Promise<Set<string>> {
  const replies = await runBatch(
    redis,
    entries.map((e) => {
      const hash = shardKeys(e.shardKey).reservations;
      return { key: hash, queue: (p) => p.hexists(hash, e.id) };
    }),
  );
  const present = new Set<string>();
  for (const [i, [err, found]] of replies.entries()) {
    if (err) throw err;
    if (Number(found) === 1) present.add((entries[i] as { id: string }).id);
  }
  return present;
}

/** One reservation hash found by a scan: its entries (id → JSON) and how to delete some of them. */
export interface ReservationBatch {
  entries: Record<string, string>;
  /** Deletes these ids from this hash; answers how many existed. */
  delete(ids: string[]): Promise<number>;
}

/** Every reservation hash of every product, one at a time (SCAN: entries written meanwhile may be missed). */
export async function* scanReservations(redis: RedisClient): AsyncIterable<ReservationBatch> {
  for await (const keys of scanKeys(redis, RESERVATION_HASHES)) {
    for (const key of keys) {
      yield {
        entries: await redis.hgetall(key),
        delete: (ids) => (ids.length > 0 ? redis.hdel(key, ...ids) : Promise.resolve(0)),
      };
    }
  }
}

/** Bounds of countReservations (SCAN calls of COUNT `count` each, and wall time). */
const RESERVATION_SCAN = { maxCalls: 100, count: 1000, maxMs: 500 } as const;

export interface ReservationCount {
  /** Reservation entries (accepted orders not yet persisted) in the hashes found. */
  entries: number;
  /** Reservation hashes found. */
  keys: number;
  /** False when the scan stopped at its bounds: entries is then a lower bound. */
  complete: boolean;
}

/** Sums HLEN over the reservation hashes, scanning at most `limits`. */
export async function countReservations(
  redis: RedisClient,
  limits: { maxCalls: number; count: number; maxMs: number } = RESERVATION_SCAN,
): Promise<ReservationCount> {
  const deadline = performance.now() + limits.maxMs;
  let calls = 0;
  let entries = 0;
  let keys = 0;
  let complete = true;
  // Each master scanned in turn, sharing one budget of calls and time.
  for (const node of masterClients(redis)) {
    let cursor = '0';
    do {
      if (calls >= limits.maxCalls || performance.now() >= deadline) {
        complete = false;
        break;
      }
      const [next, batch] = await node.scan(cursor, 'MATCH', RESERVATION_HASHES, 'COUNT', limits.count);
      cursor = next;
      calls += 1;
      const replies = await runBatch(
        redis,
        batch.map((key) => ({ key, queue: (p) => p.hlen(key) })),
      );
      for (const [err, n] of replies) {
        if (err) throw err;
        entries += Number(n);
      }
      keys += batch.length;
    } while (cursor !== '0');
  }
  return { entries, keys, complete };
}
