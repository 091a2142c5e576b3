// The outbox sweeper. A reservation is written by the same script that takes the stock; if the API
// died before enqueueing it, or the writer died after COMMIT but before clearing it, the sweeper
// finds it: an old reservation with a Postgres row is dropped, one without is enqueued again (same
// job id, so a job still queued makes this a no-op). Safe to run in several workers at once.
import type { Queue } from 'bullmq';
import type { Redis } from 'ioredis';
import type { Kysely } from 'kysely';
import type { Database } from '../db/database.ts';
import { existingOrderIds } from '../db/orders-repo.ts';
import type { Logger } from '../log.ts';
import { every, type Periodic } from '../periodic.ts';
import type { OrderRecord } from './order.ts';
import { parseOrderRecord } from './order-schema.ts';
import { enqueueOrder } from './queue.ts';

export interface SweeperOptions {
  redis: Redis;
  db: Kysely<Database>;
  queue: Queue<OrderRecord>;
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

const RESERVATION_KEYS = 'stock:{*}:res';

export async function sweepOnce(
  o: Omit<SweeperOptions, 'intervalMs'>,
  now = Date.now(),
): Promise<SweepResult> {
  const result: SweepResult = { scanned: 0, requeued: 0, dropped: 0 };
  const stream = o.redis.scanStream({ match: RESERVATION_KEYS, count: 500 });
  for await (const keys of stream as AsyncIterable<string[]>) {
    for (const key of keys) {
      const entries = await o.redis.hgetall(key);
      const old: OrderRecord[] = [];
      for (const raw of Object.values(entries)) {
        result.scanned += 1;
        const parsed = parseOrderRecord(safeJson(raw));
        if (parsed.ok && now - parsed.record.reservedAt >= o.ageMs) old.push(parsed.record);
      }
      if (old.length === 0) continue;
      const persisted = await existingOrderIds(
        o.db,
        old.map((r) => r.orderId),
      );
      const stale = old.filter((r) => persisted.has(r.orderId)).map((r) => r.orderId);
      if (stale.length > 0) result.dropped += await o.redis.hdel(key, ...stale);
      for (const record of old) {
        if (persisted.has(record.orderId)) continue;
        await enqueueOrder(o.queue, record);
        result.requeued += 1;
      }
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
