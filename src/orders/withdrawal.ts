// Withdrawing an order whose replication was not confirmed in time: a tombstone in Postgres first (the
// writer then never inserts it), then its units back in Redis. Postgres decides, the order's shard locked.
import type { Kysely } from 'kysely';
import type { Database } from '../db/database.ts';
import { withdrawnIds, withdrawOrder } from '../db/withdrawn-repo.ts';
import { giveBackReservation } from '../inventory/withdraw.ts';
import type { RedisClient } from '../redis/connection.ts';
import type { OrderRecord } from './order.ts';

/**
 * Withdraws the order: 'withdrawn' once its tombstone is committed (nothing is sold: the writer skips
 * it and gives its units back, whatever Redis still holds after a failover), 'persisted' when it
 * already is a row (the sweeper got there first: the order stands). Throws when Postgres could not
 * confirm either; the order's fate is then whatever Postgres holds (see `isWithdrawn`).
 * The units go back at once when Redis answers; otherwise the writer gives them back when the sweeper
 * sends it the reservation.
 */
export async function withdraw(
  redis: RedisClient,
  db: Kysely<Database>,
  record: OrderRecord,
): Promise<'withdrawn' | 'persisted'> {
  const verdict = await withdrawOrder(db, record);
  if (verdict === 'withdrawn') await giveBackReservation(redis, record).catch(() => false);
  return verdict;
}

/** True when the order was withdrawn: it was never sold, whatever reservation Redis still shows. */
export async function isWithdrawn(db: Kysely<Database>, orderId: string): Promise<boolean> {
  return (await withdrawnIds(db, [orderId])).has(orderId);
}
