// Admin changes of a sale: create/replace, restock, reshard. Each runs under the product's admin
// lock (admins are serialised, so two reshards cannot deadlock) and then under the locks of every
// current shard, taken together; orders on other products, and on shards not yet locked, flow on.
// Shard writes go through guarded scripts, so an admin whose lease lapsed cannot change stock.
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
    return this.underLocks(productId, async (old, holds) => {
      const retired = old ? await this.retire(productId, old, holds) : { stock: 0, sold: 0 };
      const generation = await this.switchTo(productId, {
        stocks: splitEvenly(spec.stock, spec.shards),
        perUserLimit: spec.perUserLimit ?? 0,
        totalDelta: spec.stock - retired.stock,
        soldDelta: retired.sold,
        oldKeys: old?.shardKeys ?? [],
        kind: old ? 'replaced' : 'created',
      });
      return { sale: await this.mustLoad(productId, generation), available: spec.stock, created: !old };
    });
  }

  /** Moves the remaining stock into `shards` new shards, live: orders waiting on old shards move over. */
  async reshard(productId: string, shards: number): Promise<AdminResult> {
    return this.underLocks(productId, async (old, holds) => {
      const sale = old ?? (await this.mustLoad(productId));
      const retired = await this.retire(productId, sale, holds);
      const generation = await this.switchTo(productId, {
        stocks: splitEvenly(retired.stock, shards),
        perUserLimit: sale.perUserLimit,
        totalDelta: 0,
        soldDelta: retired.sold,
        oldKeys: sale.shardKeys,
        kind: 'resharded',
      });
      return { sale: await this.mustLoad(productId, generation), available: retired.stock };
    });
  }

  /** Adds (or with a negative delta removes, never below 0) units, rebalancing the shards evenly. */
  async restock(productId: string, delta: number): Promise<AdminResult> {
    return this.underLocks(productId, async (old, holds) => {
      const sale = old ?? (await this.mustLoad(productId));
      const stocks = await this.readStocks(sale);
      const available = stocks.reduce((a, b) => a + b, 0);
      if (available + delta < 0) throw new InsufficientStockError(productId, available, delta);
      const target = splitEvenly(available + delta, stocks.length);
      const changes = target.map((t, i) => t - (stocks[i] ?? 0));
      // Removals first, so a failure part-way never leaves more units on sale than intended.
      const order = changes.map((_, i) => i).sort((a, b) => (changes[a] ?? 0) - (changes[b] ?? 0));
      for (const i of order) {
        const change = changes[i] ?? 0;
        if (change === 0) continue;
        const key = sale.shardKeys[i] as string;
        const [status] = replyInts(
          await this.redis.flashsaleAdjust(shardKeys(key).lock, key, (holds[i] as LockHandle).owner, change),
        );
        if (status !== ShardStatus.ok) throw new AdminLockLostError(productId, key);
      }
      await this.redis.hincrby(saleKey(productId), 'total', delta);
      await this.announce({ productId, kind: 'restocked', generation: sale.generation });
      return { sale: await this.mustLoad(productId), available: available + delta };
    });
  }

  private async mustLoad(productId: string, generation?: number): Promise<Sale> {
    const sale = await loadSale(this.redis, productId);
    if (!sale || (generation !== undefined && sale.generation < generation)) {
      throw new UnknownProductError(productId);
    }
    return sale;
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
   * Takes the product's admin lock, then the locks of all its current shards at once (safe from
   * deadlock: admins are serialised by the first lock, and an order never holds two shard locks).
   */
  private async underLocks<T>(
    productId: string,
    fn: (sale: Sale | null, holds: LockHandle[]) => Promise<T>,
  ): Promise<T> {
    return this.locks.withLock(adminLockName(productId), { waitMs: ADMIN_WAIT_MS }, async () => {
      const sale = await loadSale(this.redis, productId);
      const settled = await Promise.allSettled(
        (sale?.shardKeys ?? []).map((key) =>
          this.locks.acquire(shardKeys(key).lock, { waitMs: ADMIN_WAIT_MS }),
        ),
      );
      const holds = settled.flatMap((s) => (s.status === 'fulfilled' ? [s.value] : []));
      try {
        const failed = settled.find((s): s is PromiseRejectedResult => s.status === 'rejected');
        if (failed) throw failed.reason;
        return await fn(sale, holds);
      } finally {
        await Promise.allSettled(holds.map((h) => h.release()));
      }
    });
  }

  /** Empties and deletes every shard of the sale (under our locks), returning what they held. */
  private async retire(
    productId: string,
    sale: Sale,
    holds: LockHandle[],
  ): Promise<{ stock: number; sold: number }> {
    const p = this.redis.pipeline() as InventoryPipeline;
    sale.shardKeys.forEach((key, i) => {
      const k = shardKeys(key);
      p.flashsaleRetire(k.lock, k.stock, k.sold, (holds[i] as LockHandle).owner);
    });
    const replies = (await p.exec()) ?? [];
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
    return { stock, sold };
  }

  /** Writes the new generation's shards, then switches the list and the sale hash in one script. */
  private async switchTo(
    productId: string,
    change: {
      stocks: number[];
      perUserLimit: number;
      totalDelta: number;
      soldDelta: number;
      oldKeys: string[];
      kind: SaleEvent['kind'];
    },
  ): Promise<number> {
    const generation = await this.redis.hincrby(saleKey(productId), 'nextGen', 1);
    const keys = change.stocks.map((_, i) => shardStockKey(productId, generation, i));
    const p = this.redis.pipeline();
    keys.forEach((key, i) => p.set(key, change.stocks[i] ?? 0));
    if (change.oldKeys.length > 0) p.sadd(retiredShardsKey(productId), ...change.oldKeys);
    for (const [err] of (await p.exec()) ?? []) if (err) throw err;
    const switched = await this.redis.flashsaleSwitch(
      saleKey(productId),
      shardListKey(productId),
      generation,
      change.perUserLimit,
      change.totalDelta,
      change.soldDelta,
      Date.now(),
      ...keys,
    );
    // Admins are serialised by the admin lock, so a newer generation can only come from one whose lease lapsed.
    if (Number(switched) !== 1) throw new AdminLockLostError(productId, saleKey(productId));
    await this.announce({ productId, kind: change.kind, generation });
    return generation;
  }

  private async announce(event: SaleEvent): Promise<void> {
    await publishSaleEvent(this.redis, event);
  }
}
