// Each order row carries the per-user limit it was accepted under, and the backstop trigger checks
// a row against that limit rather than the sale's current one: lowering a sale's limit must not make
// Postgres refuse orders Redis already accepted (answered 202) under the old one, and raising it must
// not let a doubled order through unnoticed. Rows without it (written before) use sale_limits.
import { type Kysely, sql } from 'kysely';

export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .alterTable('orders')
    .addColumn('per_user_limit', 'integer', (col) => col.check(sql`per_user_limit >= 0`))
    .execute();
  await replaceTrigger(
    db,
    sql`coalesce(NEW.per_user_limit, (select per_user_limit from sale_limits where product_id = NEW.product_id))`,
  );
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await replaceTrigger(db, sql`(select per_user_limit from sale_limits where product_id = NEW.product_id)`);
  await db.schema.alterTable('orders').dropColumn('per_user_limit').execute();
}

/** The 0002 trigger function with `limitOf` as the limit a row is checked against. */
async function replaceTrigger(db: Kysely<unknown>, limitOf: ReturnType<typeof sql>): Promise<void> {
  await sql`
    create or replace function orders_per_user_limit() returns trigger
    language plpgsql as $$
    declare
      lim integer;
      held bigint;
    begin
      lim := ${limitOf};
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
}
