// Postgres backstop for the per-user limit (DESIGN.md: "a user can never hold more than the limit
// across all shards"). Redis enforces the limit on the hot path; this trigger refuses any order row
// that would take a user past the product's limit, whatever wrote it. sale_limits mirrors the
// sale's perUserLimit (kept in step by PUT /admin/products/:productId); 0 or no row means no limit.
import { type Kysely, sql } from 'kysely';

export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('sale_limits')
    .addColumn('product_id', 'text', (col) => col.primaryKey())
    .addColumn('per_user_limit', 'integer', (col) => col.notNull().check(sql`per_user_limit >= 0`))
    .addColumn('updated_at', 'timestamptz', (col) => col.notNull().defaultTo(sql`now()`))
    .execute();

  // The advisory lock serialises concurrent inserts for one (product, user), so the sum read after
  // it includes every committed row (READ COMMITTED: each statement here takes a fresh snapshot).
  // The existence check comes after the lock for the same reason: a replayed row (same id, which
  // ON CONFLICT (id) DO NOTHING will skip) must not be counted against the limit.
  await sql`
    create function orders_per_user_limit() returns trigger
    language plpgsql as $$
    declare
      lim integer;
      held bigint;
    begin
      select per_user_limit into lim from sale_limits where product_id = NEW.product_id;
      if lim is null or lim <= 0 then
        return NEW;
      end if;
      perform pg_advisory_xact_lock(hashtextextended(NEW.product_id || ':' || NEW.user_id, 0));
      if exists (select 1 from orders where id = NEW.id) then
        return NEW;
      end if;
      select coalesce(sum(quantity), 0) into held
        from orders where product_id = NEW.product_id and user_id = NEW.user_id;
      if held + NEW.quantity > lim then
        raise exception 'per-user limit exceeded: user % would hold % units of product % (limit %)',
          NEW.user_id, held + NEW.quantity, NEW.product_id, lim
          using errcode = 'check_violation';
      end if;
      return NEW;
    end
    $$`.execute(db);
  await sql`
    create trigger orders_per_user_limit before insert on orders
    for each row execute function orders_per_user_limit()`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`drop trigger if exists orders_per_user_limit on orders`.execute(db);
  await sql`drop function if exists orders_per_user_limit()`.execute(db);
  await db.schema.dropTable('sale_limits').ifExists().execute();
}
