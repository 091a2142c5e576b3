// The outbox sweeper: re-enqueues old reservations without a Postgres row (the API died before the
// enqueue) and drops those with one (the writer died before clearing them), registering timed orders
// for expiry first. Safe in several workers.

import type { Kysely } from 'kysely';
import type { Database } from '../db/database.ts';
import { existingOrderIds } from '../db/orders-repo.ts';
import { scanReservations } from '../inventory/reservations.ts';
import type { Logger } from '../log.ts';
import { every, type Periodic } from '../periodic.ts';
import type { RedisClient } from '../redis/connection.ts';
import { registerForExpiry } from './lifecycle.ts';
import type { OrderRecord } from './order.ts';
import { parseOrderRecord } from './order-schema.ts';
import { enqueueOrder, type OrderQueue } from './queue.ts';

export interface SweeperOptions {
  redis: RedisClient;
  db: Kysely<Database>;
  queue: OrderQueue;
  /** Reservations younger than this are left alone: their enqueue is probably in flight. */
  ageMs: number;
  intervalMs: number;
  logger?: Logger;
}

export interface SweepResult {
  scanned: number;
  requeued: number;
  dropped: number;
}

async function sweepOnce(o: Omit<SweeperOptions, 'intervalMs'>, now = Date.now()): Promise<SweepResult> {
  const result: SweepResult = { scanned: 0, requeued: 0, dropped: 0 };
  for await (const hash of scanReservations(o.redis)) {
    const old: OrderRecord[] = [];
    for (const raw of Object.values(hash.entries)) {
      result.scanned += 1;
      const parsed = parseOrderRecord(safeJson(raw));
      if (parsed.ok && now - parsed.record.reservedAt >= o.ageMs) old.push(parsed.record);
    }
    if (old.length === 0) continue;
    // Before its reservation can be dropped: an order with a payment deadline must be registered for
    // expiry (its API and the writer may both have died before doing it). Repeats are no-ops.
    await registerForExpiry(o.redis, old);
    const persisted = await existingOrderIds(
      o.db,
      old.map((r) => r.orderId),
    );
    result.dropped += await hash.delete(old.filter((r) => persisted.has(r.orderId)).map((r) => r.orderId));
    for (const record of old) {
      if (persisted.has(record.orderId)) continue;
      await enqueueOrder(o.queue, record);
      result.requeued += 1;
    }
  }
  return result;
}

export function startSweeper(o: SweeperOptions): Periodic {
  return every(o.intervalMs, () =>
    sweepOnce(o)
      .then((r) => {
        if (r.requeued > 0 || r.dropped > 0) o.logger?.info(r, 'sweeper re-enqueued or dropped reservations');
      })
      .catch((err: unknown) => o.logger?.warn({ err }, 'sweep failed; will retry')),
  );
}

function safeJson(raw: string): unknown {
  try {
    return JSON.parse(raw);
  } catch {
    return null;
  }
}
