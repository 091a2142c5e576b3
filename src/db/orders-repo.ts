// Confirmed orders in Postgres: the writer's idempotent batch insert and the reads the API needs.
import type { Kysely, Selectable } from 'kysely';
import type { Database, OrderRowStatus, OrdersTable } from './database.ts';

/**
 * The order record as it travels: written by reserve.lua into the shard's reservation hash (the
 * outbox), carried as the BullMQ job's data, and inserted as one row. Defined beside its table so
 * that the database layer depends on no module above it (src/orders re-exports it).
 */
export interface OrderRecord {
  orderId: string;
  productId: string;
  userId: string;
  quantity: number;
  /** Stock key of the shard the units came from, e.g. `stock:{P:3:1}`. */
  shardKey: string;
  generation: number;
  shardIndex: number;
  /** Fencing token of the shard lock hold that decremented the shard. */
  token: number;
  /** Epoch ms at which the reservation was made. */
  reservedAt: number;
  /**
   * The sale's per-user limit the order was accepted under (0: none), which the Postgres backstop
   * checks it against. Absent in records written before it existed.
   */
  perUserLimit?: number;
  /**
   * When the order must be paid by (epoch ms, Redis server time), for a sale with a payment timeout;
   * absent: no payment needed (and in records written before it existed).
   */
  payBy?: number;
}

/** Postgres binds at most 65535 parameters per statement and an order row takes 11. */
export const MAX_ORDERS_PER_INSERT = Math.floor(65535 / 11);

export interface StoredOrder extends OrderRecord {
  createdAt: Date;
  status: OrderRowStatus;
}

/**
 * Inserts the records in ONE statement; rows whose id already exists are skipped, so a replayed
 * order is a no-op. Returns how many rows were new.
 */
export async function insertOrders(db: Kysely<Database>, records: readonly OrderRecord[]): Promise<number> {
  if (records.length === 0) return 0;
  if (records.length > MAX_ORDERS_PER_INSERT) {
    throw new RangeError(
      `insertOrders takes at most ${MAX_ORDERS_PER_INSERT} records, got ${records.length}`,
    );
  }
  const result = await db
    .insertInto('orders')
    .values(
      records.map((r) => ({
        id: r.orderId,
        product_id: r.productId,
        user_id: r.userId,
        quantity: r.quantity,
        shard_key: r.shardKey,
        generation: r.generation,
        shard_index: r.shardIndex,
        fencing_token: r.token,
        reserved_at: new Date(r.reservedAt),
        per_user_limit: r.perUserLimit ?? null,
        pay_by: r.payBy === undefined ? null : new Date(r.payBy),
      })),
    )
    .onConflict((oc) => oc.column('id').doNothing())
    .executeTakeFirst();
  return Number(result.numInsertedOrUpdatedRows ?? 0n);
}

/** Number of confirmed orders for a product. */
export async function countOrders(db: Kysely<Database>, productId: string): Promise<number> {
  const row = await db
    .selectFrom('orders')
    .select((eb) => eb.fn.countAll<string>().as('n'))
    .where('product_id', '=', productId)
    .executeTakeFirstOrThrow();
  return Number(row.n);
}

/** Units of a product's rows (sum of quantities), whatever their status. */
export async function sumQuantity(db: Kysely<Database>, productId: string): Promise<number> {
  const units = await unitsByStatus(db, productId);
  return units.confirmed + units.paid + units.expired + units.cancelled;
}

/** Units of a product's rows (sum of quantities), by row status (0 for a status without rows). */
export async function unitsByStatus(
  db: Kysely<Database>,
  productId: string,
): Promise<Record<OrderRowStatus, number>> {
  const rows = await db
    .selectFrom('orders')
    .select(['status', (eb) => eb.fn.sum<string | null>('quantity').as('units')])
    .where('product_id', '=', productId)
    .groupBy('status')
    .execute();
  const units = { confirmed: 0, paid: 0, expired: 0, cancelled: 0 };
  for (const r of rows) units[r.status] = Number(r.units ?? 0);
  return units;
}

/**
 * Records an order's fate on its row (the history trigger adds the step): answers true when the row
 * now shows `status` (changed now, or already), false when the row does not exist yet. A row only
 * leaves `confirmed` once, to the fate decided in Redis, so a replay changes nothing.
 */
export async function recordFate(
  db: Kysely<Database>,
  orderId: string,
  status: Exclude<OrderRowStatus, 'confirmed'>,
): Promise<boolean> {
  const updated = await db
    .updateTable('orders')
    .set({ status })
    .where('id', '=', orderId)
    .where('status', 'in', ['confirmed', status])
    .executeTakeFirst();
  if (Number(updated.numUpdatedRows) > 0) return true;
  const row = await db.selectFrom('orders').select('status').where('id', '=', orderId).executeTakeFirst();
  if (row && row.status !== status) {
    throw new Error(`order ${orderId} is ${row.status} in Postgres, cannot become ${status}`);
  }
  return row !== undefined;
}

/** An order's status history, oldest first. */
export async function statusHistory(
  db: Kysely<Database>,
  orderId: string,
): Promise<{ status: string; at: Date }[]> {
  return db
    .selectFrom('order_status_history')
    .select(['status', 'at'])
    .where('order_id', '=', orderId)
    .orderBy('at')
    .orderBy('status')
    .execute();
}

/** The statuses of those of `ids` that have a row. */
export async function rowStatuses(
  db: Kysely<Database>,
  ids: readonly string[],
): Promise<Map<string, OrderRowStatus>> {
  if (ids.length === 0) return new Map();
  const rows = await db
    .selectFrom('orders')
    .select(['id', 'status'])
    .where('id', '=', (eb) => eb.fn.any(eb.val([...ids])))
    .execute();
  return new Map(rows.map((r) => [r.id, r.status]));
}

export async function findOrder(db: Kysely<Database>, orderId: string): Promise<StoredOrder | undefined> {
  const row = await db.selectFrom('orders').selectAll().where('id', '=', orderId).executeTakeFirst();
  return row && toStoredOrder(row);
}

/**
 * The order a buyer's attempt made, found by the attempt's ticket (the last part of its id) on
 * whichever shard it landed. Served by the (product_id, user_id) index: a buyer has few rows per sale.
 */
export async function findOrderByTicket(
  db: Kysely<Database>,
  productId: string,
  userId: string,
  ticket: string,
): Promise<StoredOrder | undefined> {
  if (!/^[0-9a-f]+$/.test(ticket)) return undefined;
  const row = await db
    .selectFrom('orders')
    .selectAll()
    .where('product_id', '=', productId)
    .where('user_id', '=', userId)
    .where('id', 'like', `%.${ticket}`)
    .executeTakeFirst();
  return row && toStoredOrder(row);
}

function toStoredOrder(row: Selectable<OrdersTable>): StoredOrder {
  return {
    orderId: row.id,
    productId: row.product_id,
    userId: row.user_id,
    quantity: row.quantity,
    shardKey: row.shard_key,
    generation: row.generation,
    shardIndex: row.shard_index,
    // Fencing tokens are INCR counters; they stay far below 2^53.
    token: Number(row.fencing_token),
    reservedAt: row.reserved_at.getTime(),
    ...(row.per_user_limit !== null && { perUserLimit: row.per_user_limit }),
    ...(row.pay_by !== null && { payBy: row.pay_by.getTime() }),
    createdAt: row.created_at,
    status: row.status,
  };
}

/** The subset of ids that already have a row (e.g. to tell reserved from confirmed orders). */
export async function existingOrderIds(db: Kysely<Database>, ids: readonly string[]): Promise<Set<string>> {
  if (ids.length === 0) return new Set();
  const rows = await db
    .selectFrom('orders')
    .select('id')
    .where('id', '=', (eb) => eb.fn.any(eb.val([...ids])))
    .execute();
  return new Set(rows.map((r) => r.id));
}
