// Admin changes of a sale (create/replace, restock, reshard, return units) under the product's admin
// lock and the locks of all its shards: retire the current generation, write the next, switch, announce.
import type { LockClient, LockHandle } from '@flashsale/lock';
import type { RedisClient } from '../redis/connection.ts';
import {
  type Applied,
  type Change,
  checkRestock,
  type PendingChange,
  parsePending,
  planFor,
} from './change.ts';
import { UnknownProductError } from './errors.ts';
import { publishSaleEvent } from './events.ts';
import { pruneRetired, retireShards, switchGeneration } from './generation.ts';
import { causeOf, recordChange } from './history.ts';
import { adminLockName, saleKey, shardKeys } from './keys.ts';
import { fromLockError, translatingLockErrors } from './lock-errors.ts';
import { availableStock, loadSale, type Sale, type SaleWindow } from './sale.ts';
import type { ExternalShardLocks } from './shard-locks.ts';

export interface SaleSpec {
  stock: number;
  shards: number;
  perUserLimit?: number;
  /** When orders open and close (epoch ms, RedisClient server time); absent: no bound. */
  window?: SaleWindow;
  /** Seconds an accepted order has to be paid before it expires; absent or 0: no payment needed. */
  paymentTimeoutSec?: number;
}

export interface AdminResult {
  sale: Sale;
  available: number;
}

/** Admin locks wait behind queued orders (the shard locks are FIFO); this bounds that wait. */
const ADMIN_WAIT_MS = 30_000;

/**
 * Admin changes of sales. Each runs under the product's admin lock (admins are serialised, so two
 * reshards cannot deadlock), then under the locks of every current shard at once; orders on other
 * products, and on shards not yet locked, flow on. Shard writes go through guarded scripts, so an
 * admin whose lease lapsed cannot change stock.
 *
 * Every change has one shape: retire all current shards (their stock and sold counts come back),
 * write a new generation, switch the product->shards list to it, announce it. So within one
 * generation a shard's stock only goes down, which lets an order trust "every shard of this
 * generation was empty" and a process keep sold-out flags per generation. The locked part is two
 * round trips (journal + retire; write + switch) plus the release.
 *
 * An admin can die between the two round trips; nothing is lost and the change finishes exactly once:
 * it is journaled in the product's slot before any shard is retired (the switch ends the journal), and
 * a retire records what it handed back, answering the same numbers when run again. The next change of
 * the product, or `recover()`, finds the journal and runs that change again first.
 */
export class SaleAdmin {
  constructor(
    private readonly redis: RedisClient,
    private readonly locks: LockClient,
    /** Shard locks on etcd or ZooKeeper (LOCK_BACKEND), where the orders take them; else the Redis locks. */
    private readonly external?: ExternalShardLocks,
  ) {}

  /** Creates the sale, or replaces it: a new generation holding `stock` units; units sold so far stay sold. */
  async put(productId: string, spec: SaleSpec): Promise<AdminResult & { created: boolean }> {
    const { sale, available, kind } = await this.change(productId, {
      action: 'put',
      stock: spec.stock,
      shards: spec.shards,
      perUserLimit: spec.perUserLimit ?? 0,
      window: spec.window,
      paymentTimeoutSec: spec.paymentTimeoutSec ?? 0,
    });
    return { sale, available, created: kind === 'created' };
  }

  /**
   * Moves the remaining stock into `shards` new shards, live: orders waiting on old shards move over.
   * `by` 'consolidation' records the change as the service's own (history.ts); default: an admin's.
   */
  async reshard(productId: string, shards: number, by?: 'consolidation'): Promise<AdminResult> {
    await this.mustExist(productId);
    const { sale, available } = await this.change(productId, {
      action: 'reshard',
      shards,
      ...(by && { by }),
    });
    return { sale, available };
  }

  /**
   * Adds (or with a negative delta removes, never below 0 left) units. Like a reshard it moves the
   * stock into a new generation (same shard count, split evenly) instead of adjusting shards in
   * place — see the header: in-place changes would let an order that had already looked at a shard
   * miss units added to it and answer sold out while stock remained. Throws StockLimitError past
   * MAX_STOCK units on sale in all, InsufficientStockError below 0 left.
   *
   * A delta of 0 changes nothing and answers the current numbers: a new generation would clear every
   * process's sold-out flag and shard cache for no units, and a client retrying "add 0" means no harm.
   */
  async restock(productId: string, delta: number): Promise<AdminResult> {
    const sale = await this.mustExist(productId);
    if (delta === 0) return { sale, available: await availableStock(this.redis, sale) };
    const { sale: after, available } = await this.change(productId, { action: 'restock', delta });
    return { sale: after, available };
  }

  /**
   * Puts the units of expired and cancelled orders (the sale's `returning`) back on sale, through a new
   * generation like a restock: within one generation stock still only goes down, so "every shard was
   * empty" stays a sound sold-out answer, and the change's event clears every process's sold-out flag.
   * The units are read under the admin lock and journaled with the change, and the switch takes exactly
   * them off `returning` (units returned meanwhile wait for the next call). Resolves to the units put
   * back (0: none were waiting, nothing changed).
   */
  async returnUnits(productId: string): Promise<number> {
    await this.mustExist(productId);
    const units = await this.underAdminLock(productId, async (admin) => {
      await this.finishPending(productId, admin);
      const waiting = Number((await this.redis.hget(saleKey(productId), 'returning')) ?? 0);
      if (waiting <= 0) return 0;
      await this.apply(productId, admin, { action: 'return', units: waiting, since: Date.now() }, true);
      return waiting;
    });
    if (units > 0) await this.prune(productId);
    return units;
  }

  /**
   * Finishes a change whose admin died between retiring and switching (every change does this first
   * anyway). Resolves to the generation it switched to, or null when no change was pending.
   */
  async recover(productId: string): Promise<number | null> {
    return this.underAdminLock(productId, (admin) => this.finishPending(productId, admin));
  }

  /**
   * Runs one change under the product's admin lock: first a change left pending by an admin that
   * died, then this one; then, still under the admin lock so answers follow the order of the
   * changes, reads the sale back for the answer.
   */
  private async change(productId: string, change: Change): Promise<Applied & { sale: Sale }> {
    const answer = await this.underAdminLock(productId, async (admin) => {
      await this.finishPending(productId, admin);
      const done = await this.apply(productId, admin, { ...change, since: Date.now() }, true);
      // The change is made: never answer it with an error that invites doing it again.
      const after = await loadSale(this.redis, productId);
      if (!after) throw new UnknownProductError(productId);
      return { ...done, sale: after };
    });
    await this.prune(productId);
    return answer;
  }

  /** Runs `work` under the product's admin lock; a lock error becomes the service's (fromLockError). */
  private underAdminLock<T>(productId: string, work: (admin: LockHandle) => Promise<T>): Promise<T> {
    return translatingLockErrors(productId, 'Redis', () =>
      this.locks.withLock(adminLockName(productId), { waitMs: ADMIN_WAIT_MS }, work),
    );
  }

  /** Under the admin lock: runs the journaled change again, if one is pending. */
  private async finishPending(productId: string, admin: LockHandle): Promise<number | null> {
    const pending = parsePending(await this.redis.hget(saleKey(productId), 'pending'));
    return pending ? (await this.apply(productId, admin, pending, false)).generation : null;
  }

  /**
   * Applies `change` to the current generation: takes the locks of all current shards at once (safe
   * from deadlock: admins are serialised by the admin lock, and an order never holds two shard
   * locks, nor waits while holding one), journals and retires, writes and switches, releases the
   * shard locks as soon as that is done, and announces the new generation. A change resumed from
   * the journal (`fresh` false) is not checked again: it was when it was journaled, and its retired
   * shards no longer show their stock.
   */
  private async apply(
    productId: string,
    admin: LockHandle,
    change: PendingChange,
    fresh: boolean,
  ): Promise<Applied> {
    const sale = await loadSale(this.redis, productId);
    const plan = planFor(productId, change, sale);
    const holds = await this.lockShards(productId, sale);
    let done: Applied;
    let shards: number;
    try {
      // Under every shard lock the stock cannot move: refuse before anything is changed.
      if (fresh && sale && change.action === 'restock') await checkRestock(this.redis, sale, change.delta);
      const retired = await retireShards(this.redis, this.external, {
        productId,
        sale,
        admin,
        holds,
        change,
      });
      const { kind, available, next } = plan(retired);
      const generation = await switchGeneration(this.redis, productId, sale, retired, next);
      done = { generation, kind, available };
      shards = next.stocks.length;
    } finally {
      await Promise.allSettled(holds.map((h) => h.release()));
    }
    // History only: a change that was made is never answered with an error for a line of it missing.
    await recordChange(this.redis, productId, {
      ...done,
      by: causeOf(change),
      shards,
      at: new Date().toISOString(),
    }).catch(() => {});
    await publishSaleEvent(this.redis, { productId, kind: done.kind, generation: done.generation });
    return done;
  }

  /**
   * Takes the locks of all the sale's shards at once, in the order of its shard keys. If any fails,
   * releases the ones taken and throws the service's error for the failure (fromLockError).
   */
  private async lockShards(productId: string, sale: Sale | null): Promise<LockHandle[]> {
    const locks = this.external?.locks ?? this.locks;
    const settled = await Promise.allSettled(
      (sale?.shardKeys ?? []).map((key) => locks.acquire(shardKeys(key).lock, { waitMs: ADMIN_WAIT_MS })),
    );
    const holds = settled.flatMap((s) => (s.status === 'fulfilled' ? [s.value] : []));
    const failed = settled.find((s): s is PromiseRejectedResult => s.status === 'rejected');
    if (!failed) return holds;
    await Promise.allSettled(holds.map((h) => h.release()));
    throw fromLockError(failed.reason, productId, this.external?.backend ?? 'Redis');
  }

  /**
   * Refuses a change of an unknown product before any lock is taken: taking the admin lock would
   * leave that lock's fencing-token counter behind, i.e. change Redis for a request answered 404.
   * (Sales are never deleted, so one that exists now still exists under the lock.)
   */
  private async mustExist(productId: string): Promise<Sale> {
    const sale = await loadSale(this.redis, productId);
    if (!sale) throw new UnknownProductError(productId);
    return sale;
  }

  /** Forgets retired shards whose orders are persisted (generation.ts); housekeeping, so never throws. */
  private async prune(productId: string): Promise<void> {
    await pruneRetired(this.redis, productId).catch(() => {
      // Housekeeping only: the next change prunes again.
    });
  }
}
