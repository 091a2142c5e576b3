// Admin changes of a sale: create/replace, restock, reshard. Each runs under the product's admin
// lock (admins are serialised, so two reshards cannot deadlock) and then under the locks of every
// current shard, taken together; orders on other products, and on shards not yet locked, flow on.
// Shard writes go through guarded scripts, so an admin whose lease lapsed cannot change stock.
//
// Every change has the same shape: retire all current shards (their stock and sold counts come
// back), write a new generation of shards, switch the product->shards list to it, announce it. So
// within one generation a shard's stock only ever goes down, which is what lets an order trust "I saw
// every shard of this generation empty" and lets a process keep sold-out flags per generation.
//
// While the shard locks are held, orders on those shards queue behind the admin, so the locked part
// is kept to two round trips (retire; write + switch) plus the release; the announcement follows.
// (An order that reaches a retired shard before hearing it reloads the shard list by itself.)
import type { Redis } from 'ioredis';
import type { LockClient, LockHandle } from '../lock/index.ts';
import { AdminLockLostError, InsufficientStockError, UnknownProductError } from './errors.ts';
import { publishSaleEvent, type SaleEvent } from './events.ts';
import { adminLockName, retiredShardsKey, saleKey, shardKeys, shardListKey, shardStockKey } from './keys.ts';
import { loadSale, type Sale, splitEvenly } from './sale.ts';
import {
  type InventoryPipeline,
  type InventoryRedis,
  replyInts,
  ShardStatus,
  withInventoryScripts,
} from './scripts.ts';

export interface SaleSpec {
  stock: number;
  shards: number;
  perUserLimit?: number;
}

export interface AdminResult {
  sale: Sale;
  available: number;
}

/** Admin locks wait behind queued orders (the shard locks are FIFO); this bounds that wait. */
const ADMIN_WAIT_MS = 30_000;

/** What a change hands to `switchTo`: the new generation's stock and how the sale's totals move. */
interface NextGeneration {
  stocks: number[];
  perUserLimit: number;
  /** Change of `total` (units put on sale or taken off). */
  totalDelta: number;
}

export class SaleAdmin {
  private readonly redis: InventoryRedis;

  constructor(
    redis: Redis,
    private readonly locks: LockClient,
  ) {
    this.redis = withInventoryScripts(redis);
  }

  /** Creates the sale, or replaces it: a new generation holding `stock` units; units sold so far stay sold. */
  async put(productId: string, spec: SaleSpec): Promise<AdminResult & { created: boolean }> {
    return this.change(productId, async (old, holds) => {
      const retired = old ? await this.retire(productId, old, holds) : { stock: 0, sold: 0, generation: 0 };
      const generation = await this.switchTo(productId, old, retired, {
        stocks: splitEvenly(spec.stock, spec.shards),
        perUserLimit: spec.perUserLimit ?? 0,
        totalDelta: spec.stock - retired.stock,
      });
      const kind = old ? 'replaced' : 'created';
      return { generation, kind, result: { available: spec.stock, created: !old } };
    });
  }

  /** Moves the remaining stock into `shards` new shards, live: orders waiting on old shards move over. */
  async reshard(productId: string, shards: number): Promise<AdminResult> {
    await this.mustExist(productId);
    return this.change(productId, async (old, holds) => {
      const sale = old ?? this.unknown(productId);
      const retired = await this.retire(productId, sale, holds);
      const generation = await this.switchTo(productId, sale, retired, {
        stocks: splitEvenly(retired.stock, shards),
        perUserLimit: sale.perUserLimit,
        totalDelta: 0,
      });
      return { generation, kind: 'resharded', result: { available: retired.stock } };
    });
  }

  /**
   * Adds (or with a negative delta removes, never below 0 left) units. Like a reshard it moves the
   * stock into a new generation (same shard count, split evenly) instead of adjusting shards in
   * place — see the header: in-place changes would let an order that had already looked at a shard
   * miss units added to it and answer sold out while stock remained.
   */
  async restock(productId: string, delta: number): Promise<AdminResult> {
    await this.mustExist(productId);
    return this.change(productId, async (old, holds) => {
      const sale = old ?? this.unknown(productId);
      if (delta < 0) {
        // Under every shard lock the stock cannot move: refuse before anything is changed.
        const available = (await this.readStocks(sale)).reduce((a, b) => a + b, 0);
        if (available + delta < 0) throw new InsufficientStockError(productId, available, delta);
      }
      const retired = await this.retire(productId, sale, holds);
      const available = Math.max(0, retired.stock + delta);
      const generation = await this.switchTo(productId, sale, retired, {
        stocks: splitEvenly(available, sale.shardKeys.length),
        perUserLimit: sale.perUserLimit,
        totalDelta: available - retired.stock,
      });
      return { generation, kind: 'restocked', result: { available } };
    });
  }

  /**
   * Runs one change: under the product's admin lock, takes the locks of all current shards at once
   * (safe from deadlock: admins are serialised by the first lock, and an order never holds two shard
   * locks, nor waits while holding one), runs `apply`, and releases the shard locks as soon as it is
   * done. Then, still under the admin lock so events and answers follow the order of the changes,
   * announces the new generation and reads the sale back for the answer.
   */
  private async change<R extends object>(
    productId: string,
    apply: (
      sale: Sale | null,
      holds: LockHandle[],
    ) => Promise<{ generation: number; kind: SaleEvent['kind']; result: R }>,
  ): Promise<R & { sale: Sale }> {
    const answer = await this.locks.withLock(
      adminLockName(productId),
      { waitMs: ADMIN_WAIT_MS },
      async () => {
        const sale = await loadSale(this.redis, productId);
        const settled = await Promise.allSettled(
          (sale?.shardKeys ?? []).map((key) =>
            this.locks.acquire(shardKeys(key).lock, { waitMs: ADMIN_WAIT_MS }),
          ),
        );
        const holds = settled.flatMap((s) => (s.status === 'fulfilled' ? [s.value] : []));
        let done: Awaited<ReturnType<typeof apply>>;
        try {
          const failed = settled.find((s): s is PromiseRejectedResult => s.status === 'rejected');
          if (failed) throw failed.reason;
          done = await apply(sale, holds);
        } finally {
          await Promise.allSettled(holds.map((h) => h.release()));
        }
        await publishSaleEvent(this.redis, { productId, kind: done.kind, generation: done.generation });
        // The change is made: never answer it with an error that invites doing it again.
        const after = await loadSale(this.redis, productId);
        if (!after) throw new UnknownProductError(productId);
        return { ...done.result, sale: after };
      },
    );
    await this.pruneRetired(productId).catch(() => {
      // Housekeeping only: the next change prunes again.
    });
    return answer;
  }

  private unknown(productId: string): never {
    throw new UnknownProductError(productId);
  }

  /**
   * Refuses a change of an unknown product before any lock is taken: taking the admin lock would
   * leave that lock's fencing-token counter behind, i.e. change Redis for a request answered 404.
   * (Sales are never deleted, so one that exists now still exists under the lock.)
   */
  private async mustExist(productId: string): Promise<void> {
    if (!(await loadSale(this.redis, productId))) this.unknown(productId);
  }

  private async readStocks(sale: Sale): Promise<number[]> {
    const p = this.redis.pipeline();
    for (const key of sale.shardKeys) p.get(key);
    const replies = (await p.exec()) ?? [];
    return replies.map(([err, v]) => {
      if (err) throw err;
      return Number(v ?? 0);
    });
  }

  /**
   * Forgets retired shards whose reservations are all persisted. A retired shard never takes a
   * reservation again (its stock key is gone), so once its reservation hash is empty it stays empty;
   * without this the set, which every status read walks, would grow with every change.
   */
  private async pruneRetired(productId: string): Promise<void> {
    const retired = await this.redis.smembers(retiredShardsKey(productId));
    if (retired.length === 0) return;
    const p = this.redis.pipeline();
    for (const key of retired) p.exists(shardKeys(key).reservations);
    const replies = (await p.exec()) ?? [];
    const done = retired.filter((_, i) => {
      const [err, n] = replies[i] ?? [new Error('no reply')];
      return !err && Number(n) === 0;
    });
    if (done.length > 0) await this.redis.srem(retiredShardsKey(productId), ...done);
  }

  /**
   * Empties and deletes every shard of the sale (under our locks), returning what they held, and in
   * the same round trip reserves the number of the generation that will replace them.
   */
  private async retire(
    productId: string,
    sale: Sale,
    holds: LockHandle[],
  ): Promise<{ stock: number; sold: number; generation: number }> {
    const p = this.redis.pipeline() as InventoryPipeline;
    sale.shardKeys.forEach((key, i) => {
      const k = shardKeys(key);
      p.flashsaleRetire(k.lock, k.stock, k.sold, (holds[i] as LockHandle).owner);
    });
    p.hincrby(saleKey(productId), 'nextGen', 1);
    const replies = (await p.exec()) ?? [];
    const [genErr, generation] = replies.pop() ?? [new Error('no reply')];
    if (genErr) throw genErr;
    let stock = 0;
    let sold = 0;
    replies.forEach(([err, reply], i) => {
      if (err) throw err;
      const [status, s, n] = replyInts(reply);
      if (status === ShardStatus.ok) {
        stock += s ?? 0;
        sold += n ?? 0;
      } else if (status !== ShardStatus.retired) {
        throw new AdminLockLostError(productId, sale.shardKeys[i] as string);
      }
    });
    return { stock, sold, generation: Number(generation) };
  }

  /**
   * Writes the new generation's shards and then — in the same pipeline, so in this order — switches
   * the list and the sale hash together in one script.
   */
  private async switchTo(
    productId: string,
    old: Sale | null,
    retired: { sold: number; generation: number },
    next: NextGeneration,
  ): Promise<number> {
    // A new sale has no retire step to reserve its generation number.
    const generation = old ? retired.generation : await this.redis.hincrby(saleKey(productId), 'nextGen', 1);
    const keys = next.stocks.map((_, i) => shardStockKey(productId, generation, i));
    const p = this.redis.pipeline() as InventoryPipeline;
    keys.forEach((key, i) => p.set(key, next.stocks[i] ?? 0));
    if (old) p.sadd(retiredShardsKey(productId), ...old.shardKeys);
    p.flashsaleSwitch(
      saleKey(productId),
      shardListKey(productId),
      generation,
      next.perUserLimit,
      next.totalDelta,
      retired.sold,
      Date.now(),
      ...keys,
    );
    const replies = (await p.exec()) ?? [];
    for (const [err] of replies) if (err) throw err;
    const switched = replies.at(-1)?.[1];
    // Admins are serialised by the admin lock, so a newer generation can only come from one whose lease lapsed.
    if (Number(switched) !== 1) throw new AdminLockLostError(productId, saleKey(productId));
    return generation;
  }
}
