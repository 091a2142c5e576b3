// Withdrawn orders: a reservation whose replication was not confirmed in time is withdrawn, and this
// tombstone (written before its buyer is answered 503 unavailable) keeps it from ever becoming a row.
import { type Kysely, sql } from 'kysely';

export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('withdrawn_orders')
    .addColumn('id', 'text', (col) => col.primaryKey())
    .addColumn('product_id', 'text', (col) => col.notNull())
    .addColumn('user_id', 'text', (col) => col.notNull())
    .addColumn('quantity', 'integer', (col) => col.notNull())
    .addColumn('shard_key', 'text', (col) => col.notNull())
    .addColumn('withdrawn_at', 'timestamptz', (col) => col.notNull().defaultTo(sql`now()`))
    .execute();
  await db.schema
    .createIndex('withdrawn_orders_product')
    .on('withdrawn_orders')
    .column('product_id')
    .execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropTable('withdrawn_orders').execute();
}
