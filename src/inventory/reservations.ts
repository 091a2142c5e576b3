// The shards' reservation hashes (the outbox): each entry is written by reserve.lua with the units it
// takes, and deleted once its order is persisted. Everything that reads or clears them goes through here.
import { performance } from 'node:perf_hooks';
import type { Redis } from 'ioredis';
import {
  parseShardKey,
  RESERVATION_HASHES,
  retiredShardsKey,
  type ShardRef,
  shardKeys,
  shardListKey,
  shardStockKey,
} from './keys.ts';

/** The reservation `id` on a shard of a known place (product, generation, index); null when absent. */
export async function readReservation(
  redis: Redis,
  shard: Omit<ShardRef, 'key'>,
  id: string,
): Promise<string | null> {
  const key = shardStockKey(shard.productId, shard.generation, shard.index);
  return redis.hget(shardKeys(key).reservations, id);
}

/**
 * Looks for a reservation on every shard of the product that may still hold one: the current ones and
 * the retired ones whose reservations are not all persisted yet. `idOn` names the entry to look for on
 * each shard (null: none there). Answers the first entry found.
 */
export async function findReservation(
  redis: Redis,
  productId: string,
  idOn: (shard: ShardRef) => string | null,
): Promise<string | null> {
  const [listed, retired] = await Promise.all([
    redis.lrange(shardListKey(productId), 0, -1),
    redis.smembers(retiredShardsKey(productId)),
  ]);
  const p = redis.pipeline();
  for (const key of new Set([...listed, ...retired])) {
    const shard = parseShardKey(key);
    const id = shard && idOn(shard);
    if (id) p.hget(shardKeys(key).reservations, id);
  }
  for (const [err, json] of (await p.exec()) ?? []) {
    if (err) throw err;
    if (typeof json === 'string') return json;
  }
  return null;
}

/** Deletes reservations (their orders are persisted); answers how many deletions failed. */
export async function deleteReservations(
  redis: Redis,
  entries: readonly { shardKey: string; id: string }[],
): Promise<number> {
  if (entries.length === 0) return 0;
  const p = redis.pipeline();
  for (const e of entries) p.hdel(shardKeys(e.shardKey).reservations, e.id);
  const replies = (await p.exec()) ?? [];
  return replies.filter(([err]) => err).length;
}

/** One reservation hash found by a scan: its entries (id → JSON) and how to delete some of them. */
export interface ReservationBatch {
  entries: Record<string, string>;
  /** Deletes these ids from this hash; answers how many existed. */
  delete(ids: string[]): Promise<number>;
}

/** Every reservation hash of every product, one at a time (SCAN: entries written meanwhile may be missed). */
export async function* scanReservations(redis: Redis): AsyncIterable<ReservationBatch> {
  const stream = redis.scanStream({ match: RESERVATION_HASHES, count: 500 });
  for await (const keys of stream as AsyncIterable<string[]>) {
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
  redis: Redis,
  limits: { maxCalls: number; count: number; maxMs: number } = RESERVATION_SCAN,
): Promise<ReservationCount> {
  const deadline = performance.now() + limits.maxMs;
  let cursor = '0';
  let calls = 0;
  let entries = 0;
  let keys = 0;
  do {
    const [next, batch] = await redis.scan(cursor, 'MATCH', RESERVATION_HASHES, 'COUNT', limits.count);
    cursor = next;
    calls += 1;
    if (batch.length > 0) {
      const p = redis.pipeline();
      for (const key of batch) p.hlen(key);
      for (const [err, n] of (await p.exec()) ?? []) {
        if (err) throw err;
        entries += Number(n);
      }
      keys += batch.length;
    }
  } while (cursor !== '0' && calls < limits.maxCalls && performance.now() < deadline);
  return { entries, keys, complete: cursor === '0' };
}
