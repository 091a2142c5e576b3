// The hot path: reserve units of a product on one of its shards, round-robin: one script call on a free
// shard (its lock taken for the run), or acquire + reserve + release pipelined after waiting on a busy one.
import { performance } from 'node:perf_hooks';
import { LockAcquireTimeoutError, type LockClient } from '@flashsale/lock';
import { isConnectionError, UnavailableError } from '../errors.ts';
import type { RedisClient } from '../redis/connection.ts';
import type { InputOf } from '../redis/lua.ts';
import type { Catalog } from './catalog.ts';
import {
  BusyError,
  outOfStock,
  ReservationInDoubtError,
  SoldOutError,
  UnknownProductError,
} from './errors.ts';
import type { Turn } from './hold-relay.ts';
import { type ShardRef, shardKeys } from './keys.ts';
import { fromLockError } from './lock-errors.ts';
import { type Final, reserved, reserveOutcome, type ShardOutcome, settled } from './replies.ts';
import {
  type Reservation,
  type ReserveRequest,
  type ReserverOptions,
  reserveInput,
  SEND_LEASE_MS,
  type Sent,
} from './reserve-request.ts';
import { readShardStocks, type Sale, windowError } from './sale.ts';
import { RESERVE } from './scripts.ts';
import type { ExternalShardLocks } from './shard-locks.ts';
import { refuseIfStranded, routable } from './stranded.ts';

/** A reshard retires the shards an order picked; after this many in a row, answer busy. */
const MAX_GENERATION_HOPS = 5;

export class StockReserver {
  constructor(
    private readonly redis: RedisClient,
    private readonly locks: LockClient,
    private readonly catalog: Catalog,
    private readonly options: ReserverOptions,
  ) {
    // runGuarded queues reserve.lua on a pipeline of the lock client's connection (the same one in
    // the service), which only takes commands defined on its client beforehand.
    RESERVE.define(redis);
  }

  /** How long one reserve() may take: the lock wait budget plus room for the round trips (a fitting deadline). */
  get budgetMs(): number {
    return this.options.waitMs + 2 * SEND_LEASE_MS;
  }

  /**
   * Reserves `quantity` units on one shard of the product and writes the request's entry there.
   * Throws SoldOutError, InsufficientStockError (fewer left than `quantity`), BusyError, UnknownProductError; ReservationInDoubtError when Redis became
   * unreachable after a reservation was sent (it may have been made: look for its entry once Redis'
   * clock has passed the error's `sentDeadline`).
   */
  async reserve<T extends object>(req: ReserveRequest<T>): Promise<Reservation<T>> {
    const sent: Sent<T> = { deadline: 0, values: new Map() };
    try {
      const r = await this.walk(req, sent);
      const replicated = await this.replicated(r.shard.key);
      return { ...r, value: sent.values.get(r.id) as T, sentDeadline: sent.deadline, replicated };
    } catch (err) {
      if (sent.deadline > 0 && (err instanceof UnavailableError || isConnectionError(err))) {
        throw new ReservationInDoubtError(err, sent.deadline, sent.lastId ?? '');
      }
      throw err;
    }
  }

  /**
   * With `replicas`, waits until the replicas of the shard's master hold every write it made so far
   * (the reservation). Replication is asynchronous: without this, a master that dies right after
   * answering can take it along. Always true without `replicas`.
   */
  async replicated(shardKey: string): Promise<boolean> {
    return this.options.replicas ? this.options.replicas.confirm(shardKeys(shardKey).replicated) : true;
  }

  private async walk<T extends object>(
    req: ReserveRequest<T>,
    sent: Sent<T>,
  ): Promise<Extract<ShardOutcome, { kind: 'reserved' }>> {
    let consolidated = false;
    for (let hop = 0; hop < MAX_GENERATION_HOPS; hop++) {
      const sale = await this.catalog.get(req.productId);
      if (!sale) throw new UnknownProductError(req.productId);
      if (!req.recheck && this.catalog.isSoldOut(req.productId)) {
        throw new SoldOutError(req.productId);
      }
      const result = await this.reserveIn(sale, req, sent);
      if (result.kind === 'reserved') {
        // Units after all: the verdict this order re-checked had outlived a lost "units back" event.
        if (req.recheck) this.catalog.markSelling(req.productId);
        return result;
      }
      if (result.kind === 'soldOut') {
        // Enough units in all, in lots too small for this order: gather them, then once more.
        const fragmented = result.available >= req.quantity && sale.shardKeys.length > 1;
        if (!fragmented || consolidated || !this.options.consolidate) {
          throw outOfStock(req.productId, req.quantity, result.available);
        }
        const { productId, quantity } = req;
        const { generation, shardKeys } = sale;
        await this.options.consolidate({
          productId,
          generation,
          shards: shardKeys.length,
          available: result.available,
          quantity,
        });
        consolidated = true;
      }
      // Past its deadline the attempt can place nothing more: a definite "try again".
      if (result.kind === 'busy' || result.kind === 'expired') throw new BusyError(req.productId);
      if (result.kind === 'closed') throw windowError(sale, result.why);
      // Retired (a reshard moved the stock) or fenced (our hold lapsed): reload the shards and go again.
      this.catalog.invalidate(req.productId);
    }
    throw new BusyError(req.productId);
  }

  private async reserveIn<T extends object>(
    sale: Sale,
    req: ReserveRequest<T>,
    sent: Sent<T>,
  ): Promise<Final | { kind: 'busy' } | { kind: 'soldOut'; available: number }> {
    const { first, empty, stranded } = routable(sale, this.catalog.shardOrder(sale), this.options.replicas);
    const left = new Map<number, number>();
    // First every shard once without waiting: a busy shard is skipped while another is free, so
    // orders spread over the shards instead of queueing behind one (a queue on a lock is a serial
    // chain of hand-offs). Then the busy ones, sharing one wait budget: a stuck or slow shard gets
    // its share and the order moves on rather than answering 429. A single shard is waited on at once.
    const deadline = performance.now() + this.options.waitMs;
    const busyShards: number[] = [];
    let fallback = false;
    const tryShard = async (i: number, waitMs: number) => {
      const outcome = await this.onShard(sale, i, req, sent, waitMs);
      this.options.onShardAttempt?.(outcome.kind, fallback);
      fallback = true;
      if (outcome.kind === 'insufficient') {
        left.set(i, outcome.left);
        if (outcome.left === 0) this.catalog.markEmpty(sale, i);
      }
      return outcome;
    };
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
    const again = await this.retryEmpty(sale, empty, req.quantity, left, (i) => tryShard(i, waitShare(1)));
    if (again) return again;
    // A busy shard may still hold stock: that is "retry shortly", not "sold out".
    if (busy) return { kind: 'busy' };
    await refuseIfStranded(this.redis, sale, stranded, left, this.options.onStranded);
    const available = [...left.values()].reduce((a, b) => a + b, 0);
    if (available === 0 && left.size === sale.shardKeys.length) this.catalog.markSoldOut(sale);
    return { kind: 'soldOut', available };
  }

  /**
   * Tries shard `index` of the sale, waiting up to `waitMs` for its lock (0: only if free), and
   * records the entry sent in `sent`. Lock errors become the service's (fromLockError).
   */
  private async onShard<T extends object>(
    sale: Sale,
    index: number,
    req: ReserveRequest<T>,
    sent: Sent<T>,
    waitMs: number,
  ): Promise<ShardOutcome> {
    const shard: ShardRef = {
      productId: sale.productId,
      generation: sale.generation,
      index,
      key: sale.shardKeys[index] as string,
    };
    const { id, value } = req.entry(shard);
    sent.values.set(id, value);
    sent.lastId = id;
    const { external } = this.options;
    const tokenCounter = this.locks.tokenCounterKey(shardKeys(shard.key).lock);
    const input = (owner: string, token: number | '') => {
      const deadline = Math.min(req.deadline, this.options.clock.now() + SEND_LEASE_MS);
      sent.deadline = Math.max(sent.deadline, deadline);
      const { quantity } = req;
      return reserveInput({
        sale,
        shard,
        quantity,
        id,
        value,
        deadline,
        owner,
        token,
        tokenCounter,
        external,
      });
    };
    const reply = external
      ? await this.underExternalHold(external, shard, waitMs, input)
      : waitMs === 0
        ? // Not waiting: one script call reserves if nobody holds the lock, else the shard is busy. No
          // acquire, lease or release is needed, since the script's run is atomic (see reserve.lua).
          await RESERVE.run(this.redis, input('', ''))
        : await this.underRedisHold(shard, waitMs, input);
    return reply ? reserveOutcome(reply, shard, id) : { kind: 'busy' };
  }

  /** Waits for the Redis lock, then acquire + reserve + release in one pipeline; null: still busy. */
  private async underRedisHold(
    shard: ShardRef,
    waitMs: number,
    input: (owner: string, token: number | '') => InputOf<typeof RESERVE>,
  ): Promise<number[] | null> {
    try {
      const replies = await this.locks.runGuarded(
        shardKeys(shard.key).lock,
        {
          leaseMs: this.options.leaseMs,
          waitMs,
          // A re-sent reservation answers "reserved" for its order id even when its re-sent acquire lost.
          settled: (replies) => reserved(RESERVE.parse(replies[0])),
        },
        (pipeline, hold) => {
          RESERVE.run(pipeline, input(hold.owner, hold.token ?? ''));
        },
      );
      return RESERVE.parse(replies[0]);
    } catch (err) {
      if (err instanceof LockAcquireTimeoutError) return null;
      throw fromLockError(err, shard.productId, 'Redis');
    }
  }

  /**
   * A shard whose lock is on etcd or ZooKeeper: a turn at it (waitMs 0: only if free here and on the
   * service), reserve with the hold's token (reserve.lua refuses a token older than the shard's
   * fence), then pass the hold on or release it without holding up the answer: on a free shard two
   * round trips for the order, the release a third; behind another order of this process, one.
   * Null: busy.
   */
  private async underExternalHold(
    external: ExternalShardLocks,
    shard: ShardRef,
    waitMs: number,
    input: (owner: string, token: number) => InputOf<typeof RESERVE>,
  ): Promise<number[] | null> {
    let turn: Turn | null;
    try {
      turn = await external.take(shardKeys(shard.key).lock, { waitMs, leaseMs: this.options.leaseMs });
    } catch (err) {
      throw fromLockError(err, shard.productId, external.backend);
    }
    if (!turn) return null;
    try {
      return await RESERVE.run(this.redis, input(turn.owner, turn.token));
    } finally {
      turn.done();
    }
  }

  /**
   * Before refusing, looks again at the shards skipped as empty (one round trip for all), noting
   * what each holds in `left`, and tries each that now holds enough. Null: none settled the order.
   */
  private async retryEmpty(
    sale: Sale,
    empty: readonly number[],
    quantity: number,
    left: Map<number, number>,
    tryShard: (i: number) => Promise<ShardOutcome>,
  ): Promise<Final | null> {
    if (empty.length === 0) return null;
    const stocks = await readShardStocks(
      this.redis,
      empty.map((i) => sale.shardKeys[i] as string),
    );
    for (const [k, i] of empty.entries()) {
      const stock = stocks[k];
      if (stock === null) return { kind: 'retired' };
      left.set(i, stock ?? 0);
      if ((stock ?? 0) >= quantity) {
        const outcome = await tryShard(i);
        if (settled(outcome)) return outcome;
      }
    }
    return null;
  }
}
