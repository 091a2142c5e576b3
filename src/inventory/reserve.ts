// The hot path: reserve units of a product on one of its shards. Picks the next shard round-robin,
// runs acquire + guarded decrement + release as one pipelined round trip (a contended shard waits
// for its lock's hand-off), falls back to the other shards before refusing, re-checks shards it
// believed empty, and follows a reshard when the shard it picked was retired meanwhile. Every
// reservation carries the attempt's deadline (attempt.ts), so a lost reply can be resolved later.
import { performance } from 'node:perf_hooks';
import type { Redis } from 'ioredis';
import { UnavailableError } from '../errors.ts';
import { LockAcquireTimeoutError, type LockClient, LockUnavailableError, lockKeys } from '../lock/index.ts';
import type { Attempt } from '../orders/attempt.ts';
import type { OrderRecord } from '../orders/order.ts';
import { orderIdFor } from '../orders/order-id.ts';
import type { RedisClock } from '../redis/clock.ts';
import type { Catalog } from './catalog.ts';
import { BusyError, SoldOutError, UnknownProductError } from './errors.ts';
import { shardKeys } from './keys.ts';
import type { Sale } from './sale.ts';
import { type InventoryPipeline, replyInts, ShardStatus, withInventoryScripts } from './scripts.ts';

export interface ReserveRequest {
  productId: string;
  userId: string;
  quantity: number;
  /** The per-user limit the buyer's claim was checked against (default: the sale's as seen here). */
  perUserLimit?: number;
}

export interface ReserverOptions {
  leaseMs: number;
  waitMs: number;
  clock: RedisClock;
  /** Observes each shard attempt (metrics): outcome and whether it was the first shard tried. */
  onShardAttempt?: (outcome: ShardOutcome['kind'], fallback: boolean) => void;
}

type ShardOutcome =
  | { kind: 'reserved'; record: OrderRecord }
  | { kind: 'insufficient'; left: number }
  | { kind: 'busy' }
  | { kind: 'retired' }
  | { kind: 'fenced' }
  | { kind: 'expired' };

/** Outcomes that end an order's walk over the shards. */
type Final = Exclude<ShardOutcome, { kind: 'insufficient' } | { kind: 'busy' }>;

/** A reshard retires the shards an order picked; after this many in a row, answer busy. */
const MAX_GENERATION_HOPS = 5;
/**
 * A reservation must reach Redis within this long of being sent, or it is refused. Keeps the wait
 * before a lost reply can be resolved short; a healthy round trip takes well under a millisecond.
 */
const SEND_LEASE_MS = 1000;

export class StockReserver {
  private readonly redis: Redis;

  constructor(
    redis: Redis,
    private readonly locks: LockClient,
    private readonly catalog: Catalog,
    private readonly options: ReserverOptions,
  ) {
    this.redis = withInventoryScripts(redis);
  }

  /** How long an attempt may spend reserving: its wait budget plus room for the round trips. */
  get attemptLeaseMs(): number {
    return this.options.waitMs + 2 * SEND_LEASE_MS;
  }

  async reserve(req: ReserveRequest, attempt: Attempt): Promise<OrderRecord> {
    for (let hop = 0; hop < MAX_GENERATION_HOPS; hop++) {
      const sale = await this.catalog.get(req.productId);
      if (!sale) throw new UnknownProductError(req.productId);
      if (this.catalog.isSoldOut(req.productId)) throw new SoldOutError(req.productId, req.quantity, 0);
      const result = await this.reserveIn(sale, req, attempt);
      if (result.kind === 'reserved') return result.record;
      if (result.kind === 'soldOut') throw new SoldOutError(req.productId, req.quantity, result.available);
      // Past its deadline the attempt can place nothing more: a definite "try again".
      if (result.kind === 'busy' || result.kind === 'expired') throw new BusyError(req.productId);
      // Retired (a reshard moved the stock) or fenced (our hold lapsed): reload the shards and go again.
      this.catalog.invalidate(req.productId);
    }
    throw new BusyError(req.productId);
  }

  private async reserveIn(
    sale: Sale,
    req: ReserveRequest,
    attempt: Attempt,
  ): Promise<Final | { kind: 'busy' } | { kind: 'soldOut'; available: number }> {
    const { first, empty } = this.catalog.shardOrder(sale);
    const left = new Map<number, number>();
    // First every shard once without waiting: a busy shard is skipped while another is free, so
    // orders spread over the shards instead of queueing behind one (a queue on a lock is a serial
    // chain of hand-offs). Then the busy ones, sharing one wait budget: a stuck or slow shard gets
    // its share and the order moves on rather than answering 429. A single shard is waited on at once.
    const deadline = performance.now() + this.options.waitMs;
    const busyShards: number[] = [];
    let fallback = false;
    const tryShard = async (i: number, waitMs: number) => {
      const outcome = await this.onShard(sale, i, req, attempt, waitMs);
      this.options.onShardAttempt?.(outcome.kind, fallback);
      fallback = true;
      if (outcome.kind === 'insufficient') {
        left.set(i, outcome.left);
        if (outcome.left === 0) this.catalog.markEmpty(sale, i);
      }
      return outcome;
    };
    const settled = (o: ShardOutcome): o is Final => o.kind !== 'insufficient' && o.kind !== 'busy';
    const waitShare = (shardsLeft: number) =>
      Math.max(0, (deadline - performance.now()) / Math.max(1, shardsLeft));
    const spread = sale.shardKeys.length > 1;
    for (const i of first) {
      const outcome = await tryShard(i, spread ? 0 : waitShare(1));
      if (settled(outcome)) return outcome;
      if (outcome.kind === 'busy') busyShards.push(i);
    }
    for (const [k, i] of (spread ? busyShards : []).entries()) {
      const outcome = await tryShard(i, waitShare(busyShards.length - k));
      if (settled(outcome)) return outcome;
      if (outcome.kind !== 'busy') busyShards[k] = -1;
    }
    const busy = busyShards.some((i) => i >= 0);
    // Before refusing, look again at the shards we skipped as empty (one round trip for all).
    if (empty.length > 0) {
      const stocks = await this.readStocks(sale, empty);
      for (const [k, i] of empty.entries()) {
        const stock = stocks[k];
        if (stock === null) return { kind: 'retired' };
        left.set(i, stock ?? 0);
        if ((stock ?? 0) >= req.quantity) {
          const outcome = await tryShard(i, waitShare(1));
          if (settled(outcome)) return outcome;
        }
      }
    }
    // A busy shard may still hold stock: that is "retry shortly", not "sold out".
    if (busy) return { kind: 'busy' };
    const available = [...left.values()].reduce((a, b) => a + b, 0);
    if (available === 0 && left.size === sale.shardKeys.length) this.catalog.markSoldOut(sale);
    return { kind: 'soldOut', available };
  }

  private async onShard(
    sale: Sale,
    index: number,
    req: ReserveRequest,
    attempt: Attempt,
    waitMs: number,
  ): Promise<ShardOutcome> {
    const stockKey = sale.shardKeys[index] as string;
    const k = shardKeys(stockKey);
    const token = lockKeys(k.lock).token;
    const orderId = orderIdFor(sale.productId, sale.generation, index, attempt.ticket);
    const base = {
      orderId,
      productId: sale.productId,
      userId: req.userId,
      quantity: req.quantity,
      shardKey: stockKey,
      generation: sale.generation,
      shardIndex: index,
      reservedAt: Date.now(),
      perUserLimit: req.perUserLimit ?? sale.perUserLimit,
    };
    const json = JSON.stringify(base);
    let replies: unknown[];
    try {
      replies = await this.locks.runGuarded(
        k.lock,
        {
          leaseMs: this.options.leaseMs,
          waitMs,
          // A re-sent reservation answers "reserved" for its order id even when its re-sent acquire lost.
          settled: (replies) => replyInts(replies[0])[0] === ShardStatus.ok,
        },
        (pipeline, hold) => {
          const deadline = Math.min(attempt.deadline, this.options.clock.now() + SEND_LEASE_MS);
          attempt.fence = Math.max(attempt.fence, deadline);
          (pipeline as unknown as InventoryPipeline).flashsaleReserve(
            k.lock,
            token,
            k.stock,
            k.fence,
            k.sold,
            k.reservations,
            hold.owner,
            hold.token ?? '',
            req.quantity,
            orderId,
            json,
            deadline,
          );
        },
      );
    } catch (err) {
      if (err instanceof LockAcquireTimeoutError) return { kind: 'busy' };
      if (err instanceof LockUnavailableError) throw new UnavailableError('Redis', err);
      throw err;
    }
    const [status = ShardStatus.notOwner, stockLeft = 0, fence = 0] = replyInts(replies[0]);
    switch (status) {
      case ShardStatus.ok:
        return { kind: 'reserved', record: { ...base, token: fence } };
      case ShardStatus.insufficient:
        return { kind: 'insufficient', left: stockLeft };
      case ShardStatus.retired:
        return { kind: 'retired' };
      case ShardStatus.expired:
        return { kind: 'expired' };
      default:
        // Our hold was not current when the script ran (lease lapsed): nothing was written.
        return { kind: 'fenced' };
    }
  }

  /** Current stock of some shards; null for a shard that no longer exists (retired). */
  private async readStocks(sale: Sale, indexes: number[]): Promise<(number | null)[]> {
    const p = this.redis.pipeline();
    for (const i of indexes) p.get(sale.shardKeys[i] as string);
    const replies = (await p.exec()) ?? [];
    return replies.map(([err, v]) => {
      if (err) throw err;
      return v === null ? null : Number(v);
    });
  }
}
