// The order use case "place an order": Idempotency-Key, sold-out fast path, per-user limit claim,
// stock reservation and hand-off to the writer's queue; a lost reservation reply is resolved, not guessed.
import { setTimeout as sleep } from 'node:timers/promises';
import type { Kysely } from 'kysely';
import type { Database } from '../db/database.ts';
import { findOrderByTicket } from '../db/orders-repo.ts';
import { type FlashsaleError, isConnectionError, UnavailableError } from '../errors.ts';
import type { Catalog } from '../inventory/catalog.ts';
import { ReservationInDoubtError, SoldOutError, UnknownProductError } from '../inventory/errors.ts';
import type { ShardRef } from '../inventory/keys.ts';
import { findReservation } from '../inventory/reservations.ts';
import type { StockReserver } from '../inventory/reserve.ts';
import { type Sale, windowRefusal } from '../inventory/sale.ts';
import type { RedisClock } from '../redis/clock.ts';
import type { RedisClient } from '../redis/connection.ts';
import { eventually } from '../redis/eventually.ts';
import { type Attempt, CLOCK_SKEW_MARGIN_MS, newAttempt, orderIdFor } from './attempt.ts';
import type { BuyerLimits } from './buyer-limit.ts';
import { NotReplicatedError, OutcomeUnknownError } from './errors.ts';
import type { HandOff } from './hand-off.ts';
import { fingerprint, idempotent, keyInUse } from './idempotency.ts';
import {
  type KeyOutcome,
  type OrderRequest,
  type PlacedOrder,
  type PlaceOptions,
  placed,
} from './key-outcome.ts';
import { registerForExpiry } from './lifecycle.ts';
import type { OrderRecord } from './order.ts';
import { isWithdrawn, withdraw } from './withdrawal.ts';

export type { OrderRequest, PlacedOrder, PlaceOptions } from './key-outcome.ts';

export interface PlaceOrderDeps {
  redis: RedisClient;
  db: Kysely<Database>;
  catalog: Catalog;
  reserver: StockReserver;
  limits: BuyerLimits;
  /** Batches accepted orders into the writer's queue. */
  handOff: HandOff;
  clock: RedisClock;
  /** The reservation is the outbox: a failed enqueue is retried by the sweeper, so it is only reported. */
  onEnqueueError?: (err: unknown, record: OrderRecord) => void;
  /** Called when an order is withdrawn (its replicas did not confirm it in time). */
  onWithdrawn?: () => void;
  /** Called when an order is answered sold out from the in-process flag (no RedisClient round trip). */
  onSoldOutFastPath?: () => void;
}

/** How long a request whose reservation reply was lost keeps trying to learn the outcome. */
const RESOLVE_BUDGET_MS = 2000;

/**
 * Places orders: the one entry point of `POST /api/orders`, whatever carries the request.
 *
 * `place()` answers the order (`202` in HTTP) or throws a typed error: `SoldOutError`,
 * `LimitExceededError`, `UnknownProductError`, `BusyError` (retry shortly), `UnavailableError` (or
 * `NotReplicatedError`, `StrandedStockError`: nothing sold), `OutcomeUnknownError` (with the order
 * id, which GET or a retry with the same key settles), `IdempotencyKeyReusedError`,
 * `RequestInProgressError`. Replicas confirm an order before its hand-off. Every unit is taken
 * under its shard's lock and fencing token; the order reaches Postgres through a BullMQ batch job,
 * or through the sweeper when the enqueue fails. Without a key a retried request orders again.
 *
 * @example
 * const orders = new PlaceOrder({ redis, db, catalog, reserver, limits, handOff, clock });
 * const placed = await orders.place({ productId: 'p1', userId: 'alice', quantity: 2 }, { idempotencyKey: 'k7' });
 * placed.orderId; // 'p1.3.0.<ticket>': product, shard generation, shard index, attempt ticket
 */
export class PlaceOrder {
  constructor(private readonly deps: PlaceOrderDeps) {}

  /**
   * Places one order. With an Idempotency-Key (scoped to the buyer), the first request that places an
   * order decides: retries with the same key and request (for 24 h) get the same order and place
   * nothing; the same key with another request throws `IdempotencyKeyReusedError`. A refusal (unknown
   * product, outside the window, sold out, over the limit) stores nothing under the key: a request
   * cannot make Redis remember anything unless it bought something.
   */
  async place(req: OrderRequest, options: PlaceOptions = {}): Promise<PlacedOrder> {
    // Answered from the cached sale and the sold-out flag, before any key or claim is written.
    const sale = await this.deps.catalog.get(req.productId);
    if (!sale) throw new UnknownProductError(req.productId);
    const closed = windowRefusal(sale, this.deps.clock.now());
    if (closed) throw closed;
    const key = options.idempotencyKey;
    // Sold out: refused at once, unless the key holds an earlier order to answer again (one EXISTS per
    // keyed order). A verdict past its re-check bound sends this one order on to read the shards.
    const verdict = this.deps.catalog.soldOutFor(req.productId);
    if (verdict === 'soldOut' && !(key && (await keyInUse(this.deps.redis, req.userId, key)))) {
      throw this.soldOut(req);
    }
    const recheck = verdict === 'recheck';
    if (key === undefined) {
      return { ...placed(await this.placeAs(req, this.newAttempt(), recheck)), replayed: false };
    }
    let ran = false;
    const print = fingerprint({ productId: req.productId, userId: req.userId, quantity: req.quantity });
    const stored = await idempotent<KeyOutcome>(this.deps.redis, req.userId, key, print, {
      newAttempt: () => this.newAttempt(),
      // A refusal throws: the claim is given up (deleted), so the key holds nothing.
      run: async (attempt) => {
        ran = true;
        return { order: placed(await this.placeAs(req, attempt, recheck)) };
      },
      // The holder's deadline bounds every reservation it sent, so it is its fence too.
      resolve: async (attempt) => {
        const found = await this.resolve(req, attempt, attempt.deadline);
        return found && { order: placed(found) };
      },
    });
    return { ...stored.order, replayed: !ran };
  }

  /**
   * The refusal known from memory alone, before the use case runs: outside the window, or sold out
   * (without a key: a keyed order may be a retry whose order exists). Undefined: place() decides.
   */
  refusalFromMemory(req: OrderRequest, key: string | undefined): FlashsaleError | undefined {
    const sale = this.deps.catalog.cached(req.productId);
    if (!sale) return undefined;
    const closed = windowRefusal(sale, this.deps.clock.now());
    if (closed) return closed;
    if (key !== undefined || !this.deps.catalog.soldOutStands(req.productId)) return undefined;
    return this.soldOut(req);
  }

  /** A new attempt, with the deadline the reservations it sends will carry. */
  private newAttempt(): Attempt {
    return newAttempt(this.deps.clock.now() + this.deps.reserver.budgetMs);
  }

  /** The sold-out fast path: no Redis round trip at all. */
  private soldOut(req: OrderRequest): SoldOutError {
    this.deps.onSoldOutFastPath?.();
    return new SoldOutError(req.productId);
  }

  /** `recheck`: this order re-reads the shards past an old sold-out verdict (Catalog.soldOutFor). */
  private async placeAs(req: OrderRequest, attempt: Attempt, recheck = false): Promise<OrderRecord> {
    const { catalog, limits, reserver } = this.deps;
    if (!recheck && catalog.isSoldOut(req.productId)) throw this.soldOut(req);
    const sale = await catalog.get(req.productId);
    if (!sale) throw new UnknownProductError(req.productId);
    const limited = sale.perUserLimit > 0;
    const giveBack = () => eventually(() => limits.giveBack(req.productId, req.userId, attempt.ticket));
    if (limited) {
      try {
        await limits.claim(req.productId, req.userId, req.quantity, sale.perUserLimit, attempt.ticket);
      } catch (err) {
        // The claim may have been made before its reply was lost; no stock was touched yet.
        if (isConnectionError(err)) await giveBack();
        throw err;
      }
    }
    let record: OrderRecord;
    let replicated = true;
    try {
      const r = await reserver.reserve({
        productId: req.productId,
        quantity: req.quantity,
        deadline: attempt.deadline,
        recheck,
        entry: (shard) => this.entry(req, sale, shard, attempt),
      });
      record = { ...r.value, token: r.token };
      replicated = r.replicated;
    } catch (err) {
      if (!(err instanceof ReservationInDoubtError)) {
        if (limited) await giveBack();
        throw err;
      }
      record = await this.learnOutcome(req, attempt, err);
      replicated = await reserver.replicated(record.shardKey);
    }
    // Confirmed by the replicas before anything else sees the order: an unconfirmed one is withdrawn.
    if (!replicated) await this.unconfirmed(record, limited ? giveBack : undefined);
    await this.handOff(record);
    return record;
  }

  /**
   * An order its master's replicas did not confirm in time: withdrawn (NotReplicatedError, 503
   * unavailable: nothing sold, the limit claim given back), or kept when it already is a row (the
   * sweeper was first). When Postgres cannot say, it goes on to the writer and the answer is
   * OutcomeUnknownError: whichever Postgres holds, row or tombstone, is its fate, and GET reads that.
   */
  private async unconfirmed(record: OrderRecord, giveBack?: () => Promise<unknown>): Promise<void> {
    let verdict: 'withdrawn' | 'persisted';
    try {
      verdict = await withdraw(this.deps.redis, this.deps.db, record);
    } catch (err) {
      await this.handOff(record);
      throw new OutcomeUnknownError(record.orderId, err);
    }
    if (verdict === 'persisted') return;
    this.deps.onWithdrawn?.();
    await giveBack?.();
    throw new NotReplicatedError(record.orderId);
  }

  /**
   * Registers the order for expiry beside the hand-off to the writer. Failures are only reported: the
   * reservation is the outbox (the writer registers the order before clearing it, the sweeper before
   * dropping it, and the sweeper re-sends it).
   */
  private async handOff(record: OrderRecord): Promise<void> {
    const [registered, sent] = await Promise.allSettled([
      registerForExpiry(this.deps.redis, [record]),
      this.deps.handOff.send(record),
    ]);
    for (const r of [registered, sent]) {
      if (r.status === 'rejected') this.deps.onEnqueueError?.(r.reason, record);
    }
  }

  /** The reservation (the outbox entry) an order leaves in the shard it is taken from. */
  private entry(req: OrderRequest, sale: Sale, shard: ShardRef, attempt: Attempt) {
    const orderId = orderIdFor(shard, attempt.ticket);
    const value = {
      orderId,
      productId: shard.productId,
      userId: req.userId,
      quantity: req.quantity,
      shardKey: shard.key,
      generation: shard.generation,
      shardIndex: shard.index,
      reservedAt: Date.now(),
      perUserLimit: sale.perUserLimit,
      // The deadline is in Redis' time, the clock that judges it (pay-or-cancel.lua, expire-due.lua).
      ...(sale.paymentTimeoutSec > 0 && { payBy: this.deps.clock.now() + sale.paymentTimeoutSec * 1000 }),
    };
    return { id: orderId, value };
  }

  /**
   * What `attempt` did, once nothing it sent can still take effect (Redis' clock is past `fence`, the
   * latest deadline it sent): its order if it placed one, else null — and then its limit claim is given back.
   */
  private async resolve(req: OrderRequest, attempt: Attempt, fence: number): Promise<OrderRecord | null> {
    await this.deps.clock.waitPast(fence + CLOCK_SKEW_MARGIN_MS);
    const found = await this.findByTicket(req.productId, req.userId, attempt.ticket);
    if (!found) await this.deps.limits.giveBack(req.productId, req.userId, attempt.ticket);
    return found;
  }

  /**
   * The reservation's reply was lost: learn whether it was made. Redis still unreachable after the
   * budget → OutcomeUnknownError with the order id it has if it exists, keeping the claims (a retry
   * with the same Idempotency-Key resolves them); the resolution goes on in the background to give the
   * limit claim back if no order exists. By then the reservation's deadline is past, so the order
   * exists or never will: GET settles it once Redis answers.
   */
  private async learnOutcome(
    req: OrderRequest,
    attempt: Attempt,
    doubt: ReservationInDoubtError,
  ): Promise<OrderRecord> {
    const fence = doubt.sentDeadline;
    const giveUpAt = Date.now() + RESOLVE_BUDGET_MS;
    for (let pause = 50; ; pause = Math.min(pause * 2, 1000)) {
      let found: OrderRecord | null;
      try {
        found = await this.resolve(req, attempt, fence);
      } catch (err) {
        if (!isConnectionError(err)) throw err;
        if (Date.now() > giveUpAt) {
          void eventually(() => this.resolve(req, attempt, fence));
          // Answered only once the deadline has passed by this process's estimate of Redis' clock.
          await sleep(Math.max(0, fence + CLOCK_SKEW_MARGIN_MS - this.deps.clock.now()));
          throw new OutcomeUnknownError(doubt.orderId, doubt.cause);
        }
        await sleep(pause);
        continue;
      }
      if (found) return found;
      // Nothing was placed (and the limit claim is back): an ordinary outage answer.
      throw new UnavailableError('Redis', doubt.cause);
    }
  }

  /** The order of the attempt `ticket`, wherever it is: a reservation on any shard it may have used, or a row. */
  private async findByTicket(productId: string, userId: string, ticket: string): Promise<OrderRecord | null> {
    // The writer deletes a reservation only after its row is committed, so Redis is read first.
    const json = await findReservation(this.deps.redis, productId, (shard) => orderIdFor(shard, ticket));
    if (json !== null) {
      const reserved = JSON.parse(json) as OrderRecord;
      // A withdrawn order's reservation may linger (its units not yet given back): it was never sold.
      return (await isWithdrawn(this.deps.db, reserved.orderId)) ? null : reserved;
    }
    const row = await findOrderByTicket(this.deps.db, productId, userId, ticket);
    if (!row) return null;
    const { createdAt: _, status: __, ...record } = row;
    return record;
  }
}
