// An order's status for GET /api/orders/:id: its fate if it has one (paid, expired, cancelled; decided
// in Redis), else its reservation on the shard its id names (reserved, unless withdrawn), else its row.

import type { Kysely } from 'kysely';
import type { Database } from '../db/database.ts';
import { findOrder } from '../db/orders-repo.ts';
import type { Fate } from '../inventory/keys.ts';
import { readReservation } from '../inventory/reservations.ts';
import type { RedisClient } from '../redis/connection.ts';
import { parseOrderId } from './attempt.ts';
import { UnknownOrderError } from './errors.ts';
import { fateOf } from './lifecycle.ts';
import type { OrderRecord } from './order.ts';
import { isWithdrawn } from './withdrawal.ts';

export interface OrderView extends OrderRecord {
  status: 'reserved' | 'confirmed' | Fate;
}

/** Throws UnknownOrderError for an id that names no order (malformed, or neither reserved nor persisted). */
export async function orderStatus(
  redis: RedisClient,
  db: Kysely<Database>,
  orderId: string,
): Promise<OrderView> {
  const where = parseOrderId(orderId);
  if (!where) throw new UnknownOrderError(orderId);
  // Redis first: the writer deletes a reservation only after its row is committed. The fate is read
  // with it: Redis decides it, and the row follows later.
  const [reserved, fate] = await Promise.all([
    readReservation(redis, where, orderId),
    fateOf(redis, where.productId, orderId),
  ]);
  if (reserved !== null) {
    // A withdrawn order's reservation may linger until its units are given back: it was never sold.
    if (await isWithdrawn(db, orderId)) throw new UnknownOrderError(orderId);
    return { ...(JSON.parse(reserved) as OrderRecord), status: fate ?? 'reserved' };
  }
  const row = await findOrder(db, orderId);
  if (row) {
    const { status: _, ...record } = row;
    return { ...record, status: fate ?? 'confirmed' };
  }
  throw new UnknownOrderError(orderId);
}
