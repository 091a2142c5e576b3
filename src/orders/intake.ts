// Order intake: the per-user limit claim, the stock reservation and the hand-off to the writer's
// queue; an order's status, from its reservation (reserved) or its Postgres row (confirmed); and the
// resolution of an attempt whose outcome was lost (attempt.ts): when Redis breaks while a reservation
// is in flight, the request waits out the attempt's deadline and looks, rather than guessing.
import { setTimeout as sleep } from 'node:timers/promises';
import type { Queue } from 'bullmq';
import type { Redis } from 'ioredis';
import type { Kysely } from 'kysely';
import type { Database } from '../db/database.ts';
import { findOrder, findOrderByTicket } from '../db/orders-repo.ts';
import { isConnectionError, UnavailableError } from '../errors.ts';
import type { Catalog } from '../inventory/catalog.ts';
import { SoldOutError, UnknownProductError } from '../inventory/errors.ts';
import { retiredShardsKey, shardKeys, shardListKey, shardStockKey } from '../inventory/keys.ts';
import type { ReserveRequest, StockReserver } from '../inventory/reserve.ts';
import type { RedisClock } from '../redis/clock.ts';
import { eventually } from '../redis/eventually.ts';
import { type Attempt, CLOCK_SKEW_MARGIN_MS, newAttempt } from './attempt.ts';
import type { BuyerLimits } from './buyer-limit.ts';
import { OutcomeUnknownError, UnknownOrderError } from './errors.ts';
import type { OrderRecord } from './order.ts';
import { orderIdOnShard, parseOrderId } from './order-id.ts';
import { enqueueOrder } from './queue.ts';

export interface OrderView extends OrderRecord {
  status: 'reserved' | 'confirmed';
}

export interface IntakeDeps {
  redis: Redis;
  db: Kysely<Database>;
  catalog: Catalog;
  reserver: StockReserver;
  limits: BuyerLimits;
  queue: Queue<OrderRecord>;
  clock: RedisClock;
  /** The reservation is the outbox: a failed enqueue is retried by the sweeper, so it is only reported. */
  onEnqueueError?: (err: unknown, record: OrderRecord) => void;
  /** Called when an order is answered sold out from the in-process flag (no Redis round trip). */
  onSoldOutFastPath?: () => void;
}

/** How long a request whose reservation reply was lost keeps trying to learn the outcome. */
const RESOLVE_BUDGET_MS = 2000;

export class OrderIntake {
  constructor(private readonly deps: IntakeDeps) {}

  /** A new attempt, with the deadline the reservations it sends will carry. */
  newAttempt(): Attempt {
    return newAttempt(this.deps.clock.now() + this.deps.reserver.attemptLeaseMs);
  }

  async place(req: ReserveRequest, attempt = this.newAttempt()): Promise<OrderRecord> {
    const { catalog, limits, reserver } = this.deps;
    // The sold-out fast path: no Redis round trip at all.
    if (catalog.isSoldOut(req.productId)) {
      this.deps.onSoldOutFastPath?.();
      throw new SoldOutError(req.productId, req.quantity, 0);
    }
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
    try {
      record = await reserver.reserve({ ...req, perUserLimit: sale.perUserLimit }, attempt);
    } catch (err) {
      const unknownOutcome = attempt.fence > 0 && (err instanceof UnavailableError || isConnectionError(err));
      if (!unknownOutcome) {
        if (limited) await giveBack();
        throw err;
      }
      record = await this.learnOutcome(req, attempt, err);
    }
    try {
      await enqueueOrder(this.deps.queue, record);
    } catch (err) {
      this.deps.onEnqueueError?.(err, record);
    }
    return record;
  }

  /**
   * What `attempt` did, once nothing it sent can still take effect (its fence has passed in Redis'
   * clock): its order if it placed one, else null — and then its limit claim is given back.
   */
  async resolve(
    req: Pick<ReserveRequest, 'productId' | 'userId'>,
    attempt: Attempt,
  ): Promise<OrderRecord | null> {
    await this.deps.clock.waitPast(attempt.fence + CLOCK_SKEW_MARGIN_MS);
    const found = await this.findByTicket(req.productId, req.userId, attempt.ticket);
    if (!found) await this.deps.limits.giveBack(req.productId, req.userId, attempt.ticket);
    return found;
  }

  /**
   * The reservation's reply was lost: learn whether it was made. Redis still unreachable after the
   * budget → OutcomeUnknownError, keeping the claims (a retry with the same Idempotency-Key resolves
   * them), and the resolution goes on in the background to give the limit claim back if no order exists.
   */
  private async learnOutcome(req: ReserveRequest, attempt: Attempt, cause: unknown): Promise<OrderRecord> {
    const giveUpAt = Date.now() + RESOLVE_BUDGET_MS;
    for (let pause = 50; ; pause = Math.min(pause * 2, 1000)) {
      let found: OrderRecord | null;
      try {
        found = await this.resolve(req, attempt);
      } catch (err) {
        if (!isConnectionError(err)) throw err;
        if (Date.now() > giveUpAt) {
          void eventually(() => this.resolve(req, attempt));
          throw new OutcomeUnknownError(cause);
        }
        await sleep(pause);
        continue;
      }
      if (found) return found;
      // Nothing was placed (and the limit claim is back): an ordinary outage answer.
      throw new UnavailableError('Redis', cause);
    }
  }

  /** The order of the attempt `ticket`, wherever it is: a reservation on any shard it may have used, or a row. */
  private async findByTicket(productId: string, userId: string, ticket: string): Promise<OrderRecord | null> {
    const { redis } = this.deps;
    // A shard is in the current list or in the retired set until its reservations are all persisted;
    // the writer deletes a reservation only after its row is committed, so Redis is read first.
    const [listed, retired] = await Promise.all([
      redis.lrange(shardListKey(productId), 0, -1),
      redis.smembers(retiredShardsKey(productId)),
    ]);
    const candidates = [...new Set([...listed, ...retired])].flatMap((key) => {
      const orderId = orderIdOnShard(key, ticket);
      return orderId ? [{ key, orderId }] : [];
    });
    const p = redis.pipeline();
    for (const c of candidates) p.hget(shardKeys(c.key).reservations, c.orderId);
    for (const [err, json] of (await p.exec()) ?? []) {
      if (err) throw err;
      if (typeof json === 'string') return JSON.parse(json) as OrderRecord;
    }
    const row = await findOrderByTicket(this.deps.db, productId, userId, ticket);
    if (!row) return null;
    const { createdAt: _, ...record } = row;
    return record;
  }

  async find(orderId: string): Promise<OrderView> {
    const where = parseOrderId(orderId);
    if (!where) throw new UnknownOrderError(orderId);
    // Redis first: the writer deletes a reservation only after its row is committed.
    const reserved = await this.deps.redis.hget(
      shardKeys(shardStockKey(where.productId, where.generation, where.index)).reservations,
      orderId,
    );
    if (reserved !== null) return { ...(JSON.parse(reserved) as OrderRecord), status: 'reserved' };
    const row = await findOrder(this.deps.db, orderId);
    if (row) return { ...row, status: 'confirmed' };
    throw new UnknownOrderError(orderId);
  }
}
