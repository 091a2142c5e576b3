// The per-user limit Postgres enforces (migrations/0002_per_user_limit.ts): a mirror of each sale's
// perUserLimit, written whenever an admin (re)creates the sale. 0 means no limit.
import { type Kysely, sql } from 'kysely';
import type { Database } from './database.ts';

export async function upsertSaleLimit(
  db: Kysely<Database>,
  productId: string,
  perUserLimit: number,
): Promise<void> {
  await db
    .insertInto('sale_limits')
    .values({ product_id: productId, per_user_limit: perUserLimit })
    .onConflict((oc) =>
      oc.column('product_id').doUpdateSet({ per_user_limit: perUserLimit, updated_at: sql`now()` }),
    )
    .execute();
}

/** The limit Postgres enforces for the product; 0 when there is none. */
export async function saleLimit(db: Kysely<Database>, productId: string): Promise<number> {
  const row = await db
    .selectFrom('sale_limits')
    .select('per_user_limit')
    .where('product_id', '=', productId)
    .executeTakeFirst();
  return row?.per_user_limit ?? 0;
}
