// Order intake: the per-user limit claim, the stock reservation and the hand-off to the writer's
// queue; and an order's status, from its reservation (reserved) or its Postgres row (confirmed).
import type { Queue } from 'bullmq';
import type { Redis } from 'ioredis';
import type { Kysely } from 'kysely';
import type { Database } from '../db/database.ts';
import { findOrder } from '../db/orders-repo.ts';
import type { Catalog } from '../inventory/catalog.ts';
import { SoldOutError, UnknownProductError } from '../inventory/errors.ts';
import { PRODUCT_ID_PATTERN, shardKeys, shardStockKey } from '../inventory/keys.ts';
import type { ReserveRequest, StockReserver } from '../inventory/reserve.ts';
import type { BuyerLimits } from './buyer-limit.ts';
import { UnknownOrderError } from './errors.ts';
import type { OrderRecord } from './order.ts';
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
  /** The reservation is the outbox: a failed enqueue is retried by the sweeper, so it is only reported. */
  onEnqueueError?: (err: unknown, record: OrderRecord) => void;
  /** Called when an order is answered sold out from the in-process flag (no Redis round trip). */
  onSoldOutFastPath?: () => void;
}

export class OrderIntake {
  constructor(private readonly deps: IntakeDeps) {}

  async place(req: ReserveRequest): Promise<OrderRecord> {
    const { catalog, limits, reserver } = this.deps;
    // The sold-out fast path: no Redis round trip at all.
    if (catalog.isSoldOut(req.productId)) {
      this.deps.onSoldOutFastPath?.();
      throw new SoldOutError(req.productId, req.quantity, 0);
    }
    const sale = await catalog.get(req.productId);
    if (!sale) throw new UnknownProductError(req.productId);
    const limited = sale.perUserLimit > 0;
    if (limited) await limits.claim(req.productId, req.userId, req.quantity, sale.perUserLimit);
    let record: OrderRecord;
    try {
      record = await reserver.reserve(req);
    } catch (err) {
      if (limited) await limits.giveBack(req.productId, req.userId, req.quantity).catch(() => {});
      throw err;
    }
    try {
      await enqueueOrder(this.deps.queue, record);
    } catch (err) {
      this.deps.onEnqueueError?.(err, record);
    }
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

const ORDER_ID = /^([A-Za-z0-9_-]{1,64})\.(\d{1,15})\.(\d{1,4})\.([0-9a-f]{24})$/;

/** Order ids name their shard (`<product>.<generation>.<index>.<random>`), so status needs no index. */
export function parseOrderId(
  orderId: string,
): { productId: string; generation: number; index: number } | null {
  const m = ORDER_ID.exec(orderId);
  if (!m?.[1] || !PRODUCT_ID_PATTERN.test(m[1])) return null;
  return { productId: m[1], generation: Number(m[2]), index: Number(m[3]) };
}
