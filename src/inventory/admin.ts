// Admin changes of a sale (create/replace, restock, reshard) under the product's admin lock and the
// locks of all its shards: retire the current generation, write the next, switch, announce.

import type { LockClient, LockHandle } from '../lock/index.ts';
import { type RedisClient, runBatch } from '../redis/connection.ts';
import { replyInts } from '../redis/lua.ts';
import { AdminLockLostError, InsufficientStockError, UnknownProductError } from './errors.ts';
import { publishSaleEvent, type SaleEvent } from './events.ts';
import { adminLockName, retiredShardsKey, saleKey, shardKeys, shardListKey } from './keys.ts';
import { placeShards } from './placement.ts';
import { availableStock, loadSale, type Sale, type SaleWindow, splitEvenly } from './sale.ts';
import { type InventoryPipeline, type InventoryRedis, ShardStatus, withInventoryScripts } from './scripts.ts';
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

/** A change as journaled: what another admin needs to finish it once the shards are retired. */
export type Change =
  | {
      action: 'put';
      stock: number;
      shards: number;
      perUserLimit: number;
      window?: SaleWindow;
      paymentTimeoutSec?: number;
    }
  | { action: 'reshard'; shards: number }
  | { action: 'restock'; delta: number }
  /** Puts `units` of expired or cancelled orders (read from the sale's `returning` when journaled) back on sale. */
  | { action: 'return'; units: number };

/** The journal of a change that has not switched yet; `since` is when it was first journaled (ms). */
export type PendingChange = Change & { since: number };

/** Reads the journal (the sale hash's `pending` field): null when no change is pending. */
export function parsePending(raw: string | null | undefined): PendingChange | null {
  return raw ? (JSON.parse(raw) as PendingChange) : null;
}

const NO_WINDOW: SaleWindow = { startsAt: null, endsAt: null };

/** Admin locks wait behind queued orders (the shard locks are FIFO); this bounds that wait. */
const ADMIN_WAIT_MS = 30_000;

/** What the retired shards handed back, and the generation reserved for their successor. */
interface Retired {
  stock: number;
  sold: number;
  generation: number;
}

/** What a change hands to `switchTo`: the new generation's stock and how the sale's totals move. */
interface NextGeneration {
  stocks: number[];
  perUserLimit: number;
  window: SaleWindow;
  paymentTimeoutSec: number;
  /** Change of `total` (units put on sale or taken off). */
  totalDelta: number;
  /** Units of expired or cancelled orders this generation puts back on sale (off the sale's `returning`). */
  returningTaken: number;
}

/** What a change made: the generation it switched to, how it is announced, the units now on sale. */
interface Applied {
  generation: number;
  kind: SaleEvent['kind'];
  available: number;
}

type Planned = Omit<Applied, 'generation'> & { next: NextGeneration };

/** A next generation that keeps the sale's settings (limit, window, payment timeout). */
function inheriting(sale: Sale, stocks: number[], totalDelta: number, returningTaken = 0): NextGeneration {
  return {
    stocks,
    perUserLimit: sale.perUserLimit,
    window: sale.window,
    paymentTimeoutSec: sale.paymentTimeoutSec,
    totalDelta,
    returningTaken,
  };
}

/**
 * How `change` turns the retired stock into the next generation. Decided before anything is written,
 * so a change of an unknown product is refused without a journal.
 */
function planFor(productId: string, change: Change, sale: Sale | null): (retired: Retired) => Planned {
  if (change.action === 'put') {
    return (retired) => ({
      kind: sale ? 'replaced' : 'created',
      available: change.stock,
      next: {
        stocks: splitEvenly(change.stock, change.shards),
        perUserLimit: change.perUserLimit,
        window: change.window ?? NO_WINDOW,
        paymentTimeoutSec: change.paymentTimeoutSec ?? 0,
        totalDelta: change.stock - retired.stock,
        returningTaken: 0,
      },
    });
  }
  if (!sale) throw new UnknownProductError(productId);
  if (change.action === 'reshard') {
    return (retired) => ({
      kind: 'resharded',
      available: retired.stock,
      next: inheriting(sale, splitEvenly(retired.stock, change.shards), 0),
    });
  }
  if (change.action === 'return') {
    // Like a restock, but the units were never taken off `total`: they leave `returning` instead.
    return (retired) => ({
      kind: 'returned',
      available: retired.stock + change.units,
      next: inheriting(
        sale,
        splitEvenly(retired.stock + change.units, sale.shardKeys.length),
        0,
        change.units,
      ),
    });
  }
  // Like a reshard, a restock moves the stock into a new generation (same shard count) instead of
  // adjusting shards in place: see the header.
  return (retired) => {
    const available = Math.max(0, retired.stock + change.delta);
    return {
      kind: 'restocked',
      available,
      next: inheriting(sale, splitEvenly(available, sale.shardKeys.length), available - retired.stock),
    };
  };
}

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
  private readonly redis: InventoryRedis;

  constructor(
    redis: RedisClient,
    private readonly locks: LockClient,
    /** Shard locks on etcd or ZooKeeper (LOCK_BACKEND), where the orders take them; else the Redis locks. */
    private readonly external?: ExternalShardLocks,
  ) {
    this.redis = withInventoryScripts(redis);
  }

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

  /** Moves the remaining stock into `shards` new shards, live: orders waiting on old shards move over. */
  async reshard(productId: string, shards: number): Promise<AdminResult> {
    await this.mustExist(productId);
    const { sale, available } = await this.change(productId, { action: 'reshard', shards });
    return { sale, available };
  }

  /**
   * Adds (or with a negative delta removes, never below 0 left) units. Like a reshard it moves the
   * stock into a new generation (same shard count, split evenly) instead of adjusting shards in
   * place — see the header: in-place changes would let an order that had already looked at a shard
   * miss units added to it and answer sold out while stock remained.
   */
  async restock(productId: string, delta: number): Promise<AdminResult> {
    await this.mustExist(productId);
    const { sale, available } = await this.change(productId, { action: 'restock', delta });
    return { sale, available };
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
    const units = await this.locks.withLock(
      adminLockName(productId),
      { waitMs: ADMIN_WAIT_MS },
      async (admin) => {
        await this.finishPending(productId, admin);
        const waiting = Number((await this.redis.hget(saleKey(productId), 'returning')) ?? 0);
        if (waiting <= 0) return 0;
        await this.apply(productId, admin, { action: 'return', units: waiting, since: Date.now() }, true);
        return waiting;
      },
    );
    if (units > 0) {
      await this.pruneRetired(productId).catch(() => {
        // Housekeeping only: the next change prunes again.
      });
    }
    return units;
  }

  /**
   * Finishes a change whose admin died between retiring and switching (every change does this first
   * anyway). Resolves to the generation it switched to, or null when no change was pending.
   */
  async recover(productId: string): Promise<number | null> {
    return this.locks.withLock(adminLockName(productId), { waitMs: ADMIN_WAIT_MS }, (admin) =>
      this.finishPending(productId, admin),
    );
  }

  /**
   * Runs one change under the product's admin lock: first a change left pending by an admin that
   * died, then this one; then, still under the admin lock so answers follow the order of the
   * changes, reads the sale back for the answer.
   */
  private async change(productId: string, change: Change): Promise<Applied & { sale: Sale }> {
    const answer = await this.locks.withLock(
      adminLockName(productId),
      { waitMs: ADMIN_WAIT_MS },
      async (admin) => {
        await this.finishPending(productId, admin);
        const done = await this.apply(productId, admin, { ...change, since: Date.now() }, true);
        // The change is made: never answer it with an error that invites doing it again.
        const after = await loadSale(this.redis, productId);
        if (!after) throw new UnknownProductError(productId);
        return { ...done, sale: after };
      },
    );
    await this.pruneRetired(productId).catch(() => {
      // Housekeeping only: the next change prunes again.
    });
    return answer;
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
    const settled = await Promise.allSettled(
      (sale?.shardKeys ?? []).map((key) =>
        (this.external?.locks ?? this.locks).acquire(shardKeys(key).lock, { waitMs: ADMIN_WAIT_MS }),
      ),
    );
    const holds = settled.flatMap((s) => (s.status === 'fulfilled' ? [s.value] : []));
    let done: Applied;
    try {
      const failed = settled.find((s): s is PromiseRejectedResult => s.status === 'rejected');
      if (failed) throw failed.reason;
      if (fresh && sale && change.action === 'restock' && change.delta < 0) {
        // Under every shard lock the stock cannot move: refuse before anything is changed.
        const available = await availableStock(this.redis, sale);
        if (available + change.delta < 0)
          throw new InsufficientStockError(productId, available, change.delta);
      }
      const retired = await this.retire(productId, sale, holds, admin, change);
      const { kind, available, next } = plan(retired);
      done = { generation: await this.switchTo(productId, sale, retired, next), kind, available };
    } finally {
      await Promise.allSettled(holds.map((h) => h.release()));
    }
    await publishSaleEvent(this.redis, { productId, kind: done.kind, generation: done.generation });
    return done;
  }

  /**
   * Refuses a change of an unknown product before any lock is taken: taking the admin lock would
   * leave that lock's fencing-token counter behind, i.e. change Redis for a request answered 404.
   * (Sales are never deleted, so one that exists now still exists under the lock.)
   */
  private async mustExist(productId: string): Promise<void> {
    if (!(await loadSale(this.redis, productId))) throw new UnknownProductError(productId);
  }

  /**
   * Forgets retired shards whose reservations are all persisted, with their retired markers. A
   * retired shard never takes a reservation again (its stock key is gone), so once its reservation
   * hash is empty it stays empty; without this the set, which every status read walks, would grow
   * with every change. Shards still in the current list are kept: a switch cut off between adding
   * them to the set and switching leaves them there, and their markers are what finishing that
   * change replays. (A shard that has left the list never comes back to it.)
   */
  private async pruneRetired(productId: string): Promise<void> {
    const [[listErr, list], [setErr, members]] = (await this.redis
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
      this.redis,
      retired.map((key) => ({ key, queue: (p) => p.exists(shardKeys(key).reservations) })),
    );
    const done = retired.filter((_, i) => {
      const [err, n] = replies[i] ?? [new Error('no reply')];
      return !err && Number(n) === 0;
    });
    if (done.length === 0) return;
    // Forgotten first, then the markers: a marker outliving its entry in the set is never read again.
    await this.redis.srem(retiredShardsKey(productId), ...done);
    await runBatch(
      this.redis,
      done.map((key) => ({ key, queue: (p) => p.del(shardKeys(key).retired) })),
    );
  }

  /**
   * Journals the change, then empties every shard of the sale (under our locks; one pipeline per
   * master), returning what the shards held — recorded, so a shard that an admin which died already
   * retired answers the same numbers — and the number reserved for the generation that will replace
   * them. The journal lives in the product's slot and the shards in theirs, so they are two round trips.
   */
  private async retire(
    productId: string,
    sale: Sale | null,
    holds: LockHandle[],
    admin: LockHandle,
    change: PendingChange,
  ): Promise<Retired> {
    const generation = await this.redis.flashsaleJournal(
      saleKey(productId),
      adminLockName(productId),
      admin.owner,
      sale?.generation ?? 0,
      JSON.stringify(change),
    );
    // Refused: the admin lock lapsed, or another change switched meanwhile.
    if (Number(generation) === 0) throw new AdminLockLostError(productId, adminLockName(productId));
    const replies = await runBatch(
      this.redis,
      (sale?.shardKeys ?? []).map((key, i) => {
        const k = shardKeys(key);
        const hold = holds[i] as LockHandle;
        const { external } = this;
        return {
          key,
          // On etcd or ZooKeeper the lock is not in Redis: the hold's token against the shard's fence.
          queue: (p) =>
            (p as InventoryPipeline).flashsaleRetireRecorded(
              external ? external.fenceKey(k.fence) : k.lock,
              k.stock,
              k.sold,
              k.retired,
              hold.owner,
              ...(external ? [hold.token] : []),
            ),
        };
      }),
    );
    let stock = 0;
    let sold = 0;
    replies.forEach(([err, reply], i) => {
      if (err) throw err;
      const [status, s, n] = replyInts(reply);
      if (status !== ShardStatus.ok && status !== ShardStatus.retired) {
        throw new AdminLockLostError(productId, sale?.shardKeys[i] as string);
      }
      stock += s ?? 0;
      sold += n ?? 0;
    });
    return { stock, sold, generation: Number(generation) };
  }

  /**
   * Writes the new generation's shards (placed over the masters, one pipeline per master), then —
   * once they are all written — switches the list and the sale hash together in one script, which
   * also ends the journal.
   */
  private async switchTo(
    productId: string,
    old: Sale | null,
    retired: Retired,
    next: NextGeneration,
  ): Promise<number> {
    const { generation } = retired;
    const keys = placeShards(this.redis, productId, generation, next.stocks.length);
    const written = await runBatch(
      this.redis,
      keys.map((key, i) => ({ key, queue: (p) => p.set(key, next.stocks[i] ?? 0) })),
    );
    for (const [err] of written) if (err) throw err;
    const p = this.redis.pipeline() as InventoryPipeline;
    if (old) p.sadd(retiredShardsKey(productId), ...old.shardKeys);
    p.flashsaleSwitch(
      saleKey(productId),
      shardListKey(productId),
      generation,
      next.perUserLimit,
      next.totalDelta,
      retired.sold,
      Date.now(),
      next.window.startsAt ?? '',
      next.window.endsAt ?? '',
      next.paymentTimeoutSec,
      next.returningTaken,
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
