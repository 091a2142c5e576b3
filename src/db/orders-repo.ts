// Confirmed orders in Postgres: the writer's idempotent batch insert and the reads the API needs.
import type { Kysely, Selectable } from 'kysely';
import type { Database, OrdersTable } from './database.ts';

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
}

/** Postgres binds at most 65535 parameters per statement and an order row takes 10. */
export const MAX_ORDERS_PER_INSERT = Math.floor(65535 / 10);

export interface StoredOrder extends OrderRecord {
  createdAt: Date;
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

/** Confirmed units for a product (sum of quantities). */
export async function sumQuantity(db: Kysely<Database>, productId: string): Promise<number> {
  const row = await db
    .selectFrom('orders')
    .select((eb) => eb.fn.sum<string | null>('quantity').as('units'))
    .where('product_id', '=', productId)
    .executeTakeFirstOrThrow();
  return Number(row.units ?? 0);
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
    createdAt: row.created_at,
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
