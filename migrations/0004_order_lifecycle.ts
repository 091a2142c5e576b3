// Pay or expire: an order row carries its status (confirmed → paid, or expired / cancelled, whose
// units went back on sale) and its payment deadline, and every status it passed through is a row of
// order_status_history (written by a trigger, whoever changes the row). Expired and cancelled rows
// no longer count against the buyer's per-user limit: their claim was given back.
import { type Kysely, sql } from 'kysely';

export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .alterTable('orders')
    .addColumn('status', 'text', (col) =>
      col
        .notNull()
        .defaultTo('confirmed')
        .check(sql`status in ('confirmed', 'paid', 'expired', 'cancelled')`),
    )
    .addColumn('pay_by', 'timestamptz')
    .execute();
  await db.schema
    .createTable('order_status_history')
    .addColumn('order_id', 'text', (col) => col.notNull())
    .addColumn('status', 'text', (col) => col.notNull())
    .addColumn('at', 'timestamptz', (col) => col.notNull().defaultTo(sql`now()`))
    .addPrimaryKeyConstraint('order_status_history_pk', ['order_id', 'status'])
    .execute();

  // Rows written before this migration get their history too (reserved, then their status).
  await sql`
    insert into order_status_history (order_id, status, at)
    select id, 'reserved', reserved_at from orders
    union all
    select id, status, created_at from orders
    on conflict do nothing`.execute(db);

  // Each status once per order (a replayed change is a no-op); a new row starts with its reservation.
  await sql`
    create function orders_status_history() returns trigger
    language plpgsql as $$
    begin
      if TG_OP = 'INSERT' then
        insert into order_status_history (order_id, status, at)
          values (NEW.id, 'reserved', NEW.reserved_at) on conflict do nothing;
      end if;
      if TG_OP = 'INSERT' or NEW.status is distinct from OLD.status then
        insert into order_status_history (order_id, status) values (NEW.id, NEW.status)
          on conflict do nothing;
      end if;
      return NEW;
    end
    $$`.execute(db);
  await sql`
    create trigger orders_status_history after insert or update of status on orders
    for each row execute function orders_status_history()`.execute(db);

  await limitTrigger(db, sql`and status not in ('expired', 'cancelled')`);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await limitTrigger(db, sql``);
  await sql`drop trigger if exists orders_status_history on orders`.execute(db);
  await sql`drop function if exists orders_status_history()`.execute(db);
  await db.schema.dropTable('order_status_history').ifExists().execute();
  await db.schema.alterTable('orders').dropColumn('pay_by').dropColumn('status').execute();
}

/** The per-user backstop of 0003, counting only the rows that `held` selects. */
async function limitTrigger(db: Kysely<unknown>, held: ReturnType<typeof sql>): Promise<void> {
  await sql`
    create or replace function orders_per_user_limit() returns trigger
    language plpgsql as $$
    declare
      lim integer;
      held bigint;
    begin
      lim := coalesce(NEW.per_user_limit, (select per_user_limit from sale_limits where product_id = NEW.product_id));
      if lim is null or lim <= 0 then
        return NEW;
      end if;
      perform pg_advisory_xact_lock(hashtextextended(NEW.product_id || ':' || NEW.user_id, 0));
      if exists (select 1 from orders where id = NEW.id) then
        return NEW;
      end if;
      select coalesce(sum(quantity), 0) into held
        from orders where product_id = NEW.product_id and user_id = NEW.user_id ${held};
      if held + NEW.quantity > lim then
        raise exception 'per-user limit exceeded: user % would hold % units of product % (limit %)',
          NEW.user_id, held + NEW.quantity, NEW.product_id, lim
          using errcode = 'check_violation';
      end if;
      return NEW;
    end
    $$`.execute(db);
}
