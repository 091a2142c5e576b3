// Tombstones of withdrawn orders and the one rule they serve: an order id is either a row of `orders`
// or withdrawn, never both. Both sides lock the order's shard (a Postgres advisory lock) to decide.
import { type Kysely, sql, type Transaction } from 'kysely';
import type { Database } from './database.ts';
import { insertOrders, type OrderRecord } from './orders-repo.ts';

/**
 * The advisory lock that orders a withdrawal against the writer's inserts on one shard: the writer
 * holds it shared for its batch's shards, a withdrawal exclusively for one order's shard. A shard,
 * not an order, so a batch takes a handful of locks, not one per row.
 */
const LOCK_PREFIX = 'withdrawal:';

/**
 * Withdraws an order unless it is already a row: 'withdrawn' once its tombstone is committed (the
 * writer will never insert it), 'persisted' when its row exists (then the order stands).
 */
export async function withdrawOrder(
  db: Kysely<Database>,
  r: Pick<OrderRecord, 'orderId' | 'productId' | 'userId' | 'quantity' | 'shardKey'>,
): Promise<'withdrawn' | 'persisted'> {
  return db.transaction().execute(async (trx) => {
    await sql`select pg_advisory_xact_lock(hashtextextended(${LOCK_PREFIX} || ${r.shardKey}, 0))`.execute(
      trx,
    );
    // After the lock, this statement sees every row a writer committed under it.
    const row = await trx.selectFrom('orders').select('id').where('id', '=', r.orderId).executeTakeFirst();
    if (row) return 'persisted';
    await trx
      .insertInto('withdrawn_orders')
      .values({
        id: r.orderId,
        product_id: r.productId,
        user_id: r.userId,
        quantity: r.quantity,
        shard_key: r.shardKey,
      })
      .onConflict((oc) => oc.column('id').doNothing())
      .execute();
    return 'withdrawn';
  });
}

/**
 * Inserts the records that are not withdrawn (in the caller's transaction, which holds the shard
 * locks until it ends); answers how many rows were new and which records are withdrawn.
 */
export async function insertUnlessWithdrawn(
  trx: Transaction<Database>,
  records: readonly OrderRecord[],
): Promise<{ inserted: number; withdrawn: Set<string> }> {
  if (records.length === 0) return { inserted: 0, withdrawn: new Set() };
  const shards = [...new Set(records.map((r) => r.shardKey))].sort();
  await sql`select pg_advisory_xact_lock_shared(hashtextextended(${LOCK_PREFIX} || k, 0))
    from unnest(${shards}::text[]) as k`.execute(trx);
  const withdrawn = await withdrawnIds(
    trx,
    records.map((r) => r.orderId),
  );
  const inserted = await insertOrders(
    trx,
    records.filter((r) => !withdrawn.has(r.orderId)),
  );
  return { inserted, withdrawn };
}

/** The ids among `ids` that are withdrawn. */
export async function withdrawnIds(db: Kysely<Database>, ids: readonly string[]): Promise<Set<string>> {
  if (ids.length === 0) return new Set();
  const rows = await db.selectFrom('withdrawn_orders').select('id').where('id', 'in', ids).execute();
  return new Set(rows.map((r) => r.id));
}
