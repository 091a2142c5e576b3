// First schema: confirmed orders (one row per accepted order, keyed by orderId so replays are
// no-ops) and the admin audit trail.
import { type Kysely, sql } from 'kysely';

// Migrations see the schema as it was when they were written, not today's Database interface.
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('orders')
    .addColumn('id', 'text', (col) => col.primaryKey())
    .addColumn('product_id', 'text', (col) => col.notNull())
    .addColumn('user_id', 'text', (col) => col.notNull())
    .addColumn('quantity', 'integer', (col) => col.notNull().check(sql`quantity > 0`))
    .addColumn('shard_key', 'text', (col) => col.notNull())
    .addColumn('generation', 'integer', (col) => col.notNull())
    .addColumn('shard_index', 'integer', (col) => col.notNull())
    .addColumn('fencing_token', 'bigint', (col) => col.notNull())
    .addColumn('reserved_at', 'timestamptz', (col) => col.notNull())
    .addColumn('created_at', 'timestamptz', (col) => col.notNull().defaultTo(sql`now()`))
    .execute();
  await db.schema.createIndex('orders_product_id_idx').on('orders').column('product_id').execute();
  await db.schema
    .createIndex('orders_product_id_user_id_idx')
    .on('orders')
    .columns(['product_id', 'user_id'])
    .execute();

  await db.schema
    .createTable('admin_audit')
    .addColumn('id', 'bigserial', (col) => col.primaryKey())
    .addColumn('at', 'timestamptz', (col) => col.notNull().defaultTo(sql`now()`))
    .addColumn('actor', 'text', (col) => col.notNull())
    .addColumn('action', 'text', (col) => col.notNull())
    .addColumn('product_id', 'text')
    .addColumn('before', 'jsonb')
    .addColumn('after', 'jsonb')
    .addColumn('request', 'jsonb')
    .execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropTable('admin_audit').execute();
  await db.schema.dropTable('orders').execute();
}
