// The writer tests' world: one test's own redis-server, database, queue and writers, created before
// each test and torn down after it, and the orders they work on.
import { afterEach, beforeEach } from 'node:test';
import type { Redis } from 'ioredis';
import type { Kysely } from 'kysely';
import { until } from '../../harness/async.ts';
import { createTestDatabase, type TestDatabase } from '../../harness/postgres.ts';
import { RedisServer } from '../../harness/redis-server.ts';
import { loadSection } from '../../src/config/load.ts';
import { createDatabase, type Database } from '../../src/db/database.ts';
import { migrateToLatest } from '../../src/db/migrate.ts';
import { countOrders } from '../../src/db/orders-repo.ts';
import { shardKeys, shardStockKey } from '../../src/inventory/keys.ts';
import type { OrderRecord } from '../../src/orders/order.ts';
import { type BatchStats, OrderWriter, type WriterOptions } from '../../src/orders/order-writer.ts';
import { createOrderQueue, type OrderQueue } from '../../src/orders/queue.ts';
import { handle } from './handle.ts';

export const PRODUCT = 'P1';
export const SHARDS = 4;

export const order = (n: number): OrderRecord => ({
  orderId: `ord-${n.toString().padStart(6, '0')}`,
  productId: PRODUCT,
  userId: `user-${n}`,
  quantity: 1 + (n % 3),
  shardKey: shardStockKey(PRODUCT, 1, n % SHARDS),
  generation: 1,
  shardIndex: n % SHARDS,
  token: 100 + n,
  reservedAt: Date.now(),
});
export const orders = (count: number, from = 0) => Array.from({ length: count }, (_, i) => order(from + i));

/** One test's world: its own redis-server, database, queue and writers. */
/** Writes the records' reservations, as reserve.lua would have: the writer persists only reserved orders. */
export async function reserveIn(client: Redis, records: readonly OrderRecord[]): Promise<void> {
  const pipeline = client.pipeline();
  for (const r of records) pipeline.hset(shardKeys(r.shardKey).reservations, r.orderId, JSON.stringify(r));
  await pipeline.exec();
}

export interface World {
  redis: RedisServer;
  client: Redis;
  tdb: TestDatabase;
  db: Kysely<Database>;
  queue: OrderQueue;
  batches: BatchStats[];
  writers: OrderWriter[];
  extraDbs: Kysely<Database>[];
  start(overrides?: Partial<WriterOptions>): OrderWriter;
  reserve(records: OrderRecord[]): Promise<void>;
  reservationsLeft(): Promise<Set<string>>;
  counts(): Promise<Record<string, number>>;
}

export const pendingOf = (c: Record<string, number>) =>
  (c.waiting ?? 0) + (c.active ?? 0) + (c.delayed ?? 0) + (c.prioritized ?? 0);

/**
 * A fresh world before each test of the file, torn down after it: returns a handle to the current one
 * and a wait until its orders are all rows and its queue is empty.
 */
export function useWorld(): { world: World; waitUntilDrained(expectedRows: number): Promise<void> } {
  let current: World | undefined;
  beforeEach(async () => {
    const redis = await RedisServer.start();
    const tdb = await createTestDatabase();
    const db = createDatabase(tdb.url);
    await migrateToLatest(db);
    const client = redis.client();
    const batches: BatchStats[] = [];
    const writers: OrderWriter[] = [];
    const w: World = {
      redis,
      client,
      tdb,
      db,
      queue: createOrderQueue(redis.url),
      batches,
      writers,
      extraDbs: [],
      start(overrides = {}) {
        const writer = new OrderWriter({
          ...loadSection('writer', {}),
          connection: redis.url,
          db,
          batchSize: 100,
          batchMaxWaitMs: 5,
          onBatch: (s) => batches.push(s),
          ...overrides,
        });
        writers.push(writer);
        return writer;
      },
      reserve: (records) => reserveIn(client, records),
      async reservationsLeft() {
        const left = new Set<string>();
        for (let i = 0; i < SHARDS; i++) {
          for (const id of await client.hkeys(shardKeys(shardStockKey(PRODUCT, 1, i)).reservations))
            left.add(id);
        }
        return left;
      },
      async counts() {
        return w.queue.getJobCounts('waiting', 'active', 'delayed', 'prioritized', 'completed', 'failed');
      },
    };
    current = w;
  });
  afterEach(async () => {
    const w = current;
    if (!w) return;
    await Promise.all(w.writers.map((writer) => writer.close()));
    await w.queue.close();
    await Promise.all([w.db, ...w.extraDbs].map((db) => db.destroy()));
    await w.tdb.drop();
    await w.redis.stop();
  });
  const world = handle('world', () => current);
  return {
    world,
    async waitUntilDrained(expectedRows: number): Promise<void> {
      await until(
        `${expectedRows} rows and an empty queue`,
        async () =>
          (await countOrders(world.db, PRODUCT)) === expectedRows && pendingOf(await world.counts()) === 0,
        { timeoutMs: 60_000 },
      );
    },
  };
}
