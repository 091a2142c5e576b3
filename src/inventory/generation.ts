// The shard generations an admin change moves between: journal and retire the current shards, write
// the next generation and switch to it, and forget retired shards once their orders are persisted.
import type { LockHandle } from '@flashsale/lock';
import { type RedisClient, runBatch } from '../redis/connection.ts';
import type { NextGeneration, PendingChange, Retired } from './change.ts';
import { adminLockName, retiredShardsKey, saleKey, shardKeys, shardListKey } from './keys.ts';
import { placeShards } from './placement.ts';
import { journaledGeneration, mustHaveSwitched, retiredUnits } from './replies.ts';
import type { Sale } from './sale.ts';
import { JOURNAL, RETIRE, SWITCH } from './scripts.ts';
import type { ExternalShardLocks } from './shard-locks.ts';

/** What a change needs to retire a sale's shards: the admin's hold and one hold per current shard. */
export interface RetireRequest {
  productId: string;
  sale: Sale | null;
  admin: LockHandle;
  /** The holds of the sale's shards, in the order of `sale.shardKeys`. */
  holds: LockHandle[];
  change: PendingChange;
}

/**
 * Journals the change, then empties every shard of the sale (under our locks; one pipeline per
 * master), returning what the shards held — recorded, so a shard that an admin which died already
 * retired answers the same numbers — and the number reserved for the generation that will replace
 * them. The journal lives in the product's slot and the shards in theirs, so they are two round trips.
 */
export async function retireShards(
  redis: RedisClient,
  external: ExternalShardLocks | undefined,
  r: RetireRequest,
): Promise<Retired> {
  const adminLock = adminLockName(r.productId);
  const reply = await JOURNAL.run(redis, {
    sale: saleKey(r.productId),
    adminLock,
    owner: r.admin.owner,
    generation: r.sale?.generation ?? 0,
    change: JSON.stringify(r.change),
  });
  const generation = journaledGeneration(reply, r.productId, adminLock);
  const shards = r.sale?.shardKeys ?? [];
  RETIRE.define(redis);
  const replies = await runBatch(
    redis,
    shards.map((key, i) => {
      const k = shardKeys(key);
      const hold = r.holds[i] as LockHandle;
      // On etcd or ZooKeeper the lock is not in Redis: the hold's token against the shard's fence.
      const lock = external ? external.fenceKey(k.fence) : k.lock;
      const token = external ? hold.token : undefined;
      return {
        key,
        queue: (p) =>
          RETIRE.run(p, { lock, stock: k.stock, sold: k.sold, retired: k.retired, owner: hold.owner, token }),
      };
    }),
  );
  let stock = 0;
  let sold = 0;
  replies.forEach(([err, reply], i) => {
    if (err) throw err;
    const units = retiredUnits(RETIRE.parse(reply), r.productId, shards[i] as string);
    stock += units.stock;
    sold += units.sold;
  });
  return { stock, sold, generation };
}

/**
 * Writes the new generation's shards (placed over the masters, one pipeline per master), then —
 * once they are all written — switches the list and the sale hash together in one script, which
 * also ends the journal. Resolves to the generation switched to.
 */
export async function switchGeneration(
  redis: RedisClient,
  productId: string,
  old: Sale | null,
  retired: Retired,
  next: NextGeneration,
): Promise<number> {
  const { generation } = retired;
  const keys = placeShards(redis, productId, generation, next.stocks.length);
  const written = await runBatch(
    redis,
    keys.map((key, i) => ({ key, queue: (p) => p.set(key, next.stocks[i] ?? 0) })),
  );
  for (const [err] of written) if (err) throw err;
  SWITCH.define(redis);
  const p = redis.pipeline();
  if (old) p.sadd(retiredShardsKey(productId), ...old.shardKeys);
  SWITCH.run(p, {
    sale: saleKey(productId),
    shardList: shardListKey(productId),
    generation,
    perUserLimit: next.perUserLimit,
    totalDelta: next.totalDelta,
    retiredSold: retired.sold,
    createdAt: Date.now(),
    startsAt: next.window.startsAt ?? '',
    endsAt: next.window.endsAt ?? '',
    paymentTimeoutSec: next.paymentTimeoutSec,
    returningTaken: next.returningTaken,
    stockKeys: keys,
  });
  const replies = (await p.exec()) ?? [];
  for (const [err] of replies) if (err) throw err;
  mustHaveSwitched(SWITCH.parse(replies.at(-1)?.[1]), productId, saleKey(productId));
  return generation;
}

/**
 * Forgets retired shards whose reservations are all persisted, with their retired markers. A
 * retired shard never takes a reservation again (its stock key is gone), so once its reservation
 * hash is empty it stays empty; without this the set, which every status read walks, would grow
 * with every change. Shards still in the current list are kept: a switch cut off between adding
 * them to the set and switching leaves them there, and their markers are what finishing that
 * change replays. (A shard that has left the list never comes back to it.)
 */
export async function pruneRetired(redis: RedisClient, productId: string): Promise<void> {
  const [[listErr, list], [setErr, members]] = (await redis
    .pipeline()
    .lrange(shardListKey(productId), 0, -1)
    .smembers(retiredShardsKey(productId))
    .exec()) as [[Error | null, string[]], [Error | null, string[]]];
  if (listErr) throw listErr;
  if (setErr) throw setErr;
  const current = new Set(list);
  const retired = members.filter((key) => !current.has(key));
  if (retired.length === 0) return;
  const replies = await runBatch(
    redis,
    retired.map((key) => ({ key, queue: (p) => p.exists(shardKeys(key).reservations) })),
  );
  const done = retired.filter((_, i) => {
    const [err, n] = replies[i] ?? [new Error('no reply')];
    return !err && Number(n) === 0;
  });
  if (done.length === 0) return;
  // Forgotten first, then the markers: a marker outliving its entry in the set is never read again.
  await redis.srem(retiredShardsKey(productId), ...done);
  await runBatch(
    redis,
    done.map((key) => ({ key, queue: (p) => p.del(shardKeys(key).retired) })),
  );
}
