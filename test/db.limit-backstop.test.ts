// The Postgres backstop for the per-user limit (migrations/0002_per_user_limit.ts): a trigger on
// orders refuses a row that would take a user past the product's limit (SQLSTATE 23514), counts a
// replayed row once, serialises concurrent inserts of one user, and does nothing without a limit.
// Then the writer: such a row fails its job alone, with the limit in the reason.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { type Kysely, sql } from 'kysely';
import { until } from '../harness/async.ts';
import { createTestDatabase, type TestDatabase } from '../harness/postgres.ts';
import { RedisServer } from '../harness/redis-server.ts';
import * as perUserLimitMigration from '../migrations/0002_per_user_limit.ts';
import * as orderLimitMigration from '../migrations/0003_order_limit.ts';
import { loadSection } from '../src/config/load.ts';
import { createDatabase, type Database } from '../src/db/database.ts';
import { saleLimit, upsertSaleLimit } from '../src/db/limits-repo.ts';
import { migrateToLatest } from '../src/db/migrate.ts';
import { countOrders, insertOrders } from '../src/db/orders-repo.ts';
import { shardStockKey } from '../src/inventory/keys.ts';
import type { OrderRecord } from '../src/orders/order.ts';
import { OrderWriter } from '../src/orders/order-writer.ts';
import { createOrderQueue, enqueueOrder } from '../src/orders/queue.ts';
import { reserveIn } from './support/writer-world.ts';

let seq = 0;
const record = (productId: string, userId: string, quantity = 1, orderId?: string): OrderRecord => ({
  orderId: orderId ?? `${productId}.1.0.${(seq++).toString().padStart(8, '0')}`,
  productId,
  userId,
  quantity,
  shardKey: shardStockKey(productId, 1, 0),
  generation: 1,
  shardIndex: 0,
  token: seq,
  reservedAt: Date.now(),
});

async function held(db: Kysely<Database>, productId: string, userId: string): Promise<number> {
  const { rows } = await sql<{ units: number }>`
    select coalesce(sum(quantity), 0)::int as units from orders
    where product_id = ${productId} and user_id = ${userId}`.execute(db);
  return rows[0]?.units ?? 0;
}

const limitViolation = (err: unknown): boolean => {
  const e = err as { code?: string; message?: string };
  return (
    e.code === '23514' &&
    /per-user limit exceeded/.test(e.message ?? '') &&
    /\(limit \d+\)/.test(e.message ?? '')
  );
};

describe('per-user limit backstop in Postgres', () => {
  let tdb: TestDatabase;
  let db: Kysely<Database>;
  before(async () => {
    tdb = await createTestDatabase();
    db = createDatabase(tdb.url, { max: 12 });
    await migrateToLatest(db);
  });
  after(async () => {
    await db.destroy();
    await tdb.drop();
  });

  test('sale_limits is upserted and read back; 0 when absent', async () => {
    assert.equal(await saleLimit(db, 'lim-rw'), 0);
    await upsertSaleLimit(db, 'lim-rw', 4);
    assert.equal(await saleLimit(db, 'lim-rw'), 4);
    await upsertSaleLimit(db, 'lim-rw', 2);
    assert.equal(await saleLimit(db, 'lim-rw'), 2);
    await assert.rejects(upsertSaleLimit(db, 'lim-rw', -1), { code: '23514' });
  });

  test('a row past the limit fails with 23514 and inserts nothing; other users are unaffected', async () => {
    await upsertSaleLimit(db, 'lim-a', 3);
    assert.equal(await insertOrders(db, [record('lim-a', 'ann', 2)]), 1);
    await assert.rejects(insertOrders(db, [record('lim-a', 'ann', 2)]), limitViolation);
    assert.equal(await held(db, 'lim-a', 'ann'), 2);
    // In one multi-row statement the rows before count too: 2 + 1 fits, the next one does not.
    await assert.rejects(
      insertOrders(db, [record('lim-a', 'ann', 1), record('lim-a', 'ann', 1)]),
      limitViolation,
    );
    assert.equal(await held(db, 'lim-a', 'ann'), 2, 'the failed statement inserted nothing');
    assert.equal(await insertOrders(db, [record('lim-a', 'ann', 1)]), 1, 'up to the limit is fine');
    assert.equal(await held(db, 'lim-a', 'ann'), 3);
    // Another user, and the same user on another product (no limit there), are not affected.
    assert.equal(await insertOrders(db, [record('lim-a', 'bob', 3), record('lim-a', 'cy', 1)]), 2);
    assert.equal(await insertOrders(db, [record('other-product', 'ann', 5)]), 1);
  });

  test('a replayed row (same id) is not counted again', async () => {
    await upsertSaleLimit(db, 'lim-r', 3);
    const first = record('lim-r', 'rae', 3);
    assert.equal(await insertOrders(db, [first]), 1);
    // At the limit: a replay of the same order is a no-op, not a violation, alone or in a batch.
    assert.equal(await insertOrders(db, [first]), 0);
    assert.equal(await insertOrders(db, [first, record('lim-r', 'sam', 1)]), 1);
    assert.equal(await held(db, 'lim-r', 'rae'), 3);
    await assert.rejects(insertOrders(db, [record('lim-r', 'rae', 1)]), limitViolation);
  });

  test('10 concurrent single-row inserts for one user with limit 3 leave exactly 3 rows', async () => {
    await upsertSaleLimit(db, 'lim-c', 3);
    const results = await Promise.allSettled(
      Array.from({ length: 10 }, () =>
        db.transaction().execute((trx) => insertOrders(trx, [record('lim-c', 'cat', 1)])),
      ),
    );
    const ok = results.filter((r) => r.status === 'fulfilled');
    const refused = results.filter((r) => r.status === 'rejected');
    assert.equal(ok.length, 3);
    for (const r of refused) assert.ok(limitViolation(r.reason), String(r.reason));
    assert.equal(await countOrders(db, 'lim-c'), 3);
    assert.equal(await held(db, 'lim-c', 'cat'), 3);
  });

  test('no limit (0 or no sale_limits row): no check', async () => {
    await upsertSaleLimit(db, 'lim-zero', 0);
    assert.equal(
      await insertOrders(
        db,
        Array.from({ length: 20 }, () => record('lim-zero', 'zed', 5)),
      ),
      20,
    );
    assert.equal(
      await insertOrders(
        db,
        Array.from({ length: 20 }, () => record('lim-none', 'zed', 5)),
      ),
      20,
    );
    // Lowering the limit later refuses new rows only; what is there stays.
    await upsertSaleLimit(db, 'lim-zero', 3);
    await assert.rejects(insertOrders(db, [record('lim-zero', 'zed', 1)]), { code: '23514' });
    assert.equal(await held(db, 'lim-zero', 'zed'), 100);
  });

  test("a row is checked against the limit it was accepted under, not the sale's current one", async () => {
    await upsertSaleLimit(db, 'lim-o', 1);
    // Accepted (202) while the limit was 3, persisted after an admin lowered it to 1: not refused.
    const under = (quantity: number, perUserLimit: number) => ({
      ...record('lim-o', 'olga', quantity),
      perUserLimit,
    });
    assert.equal(await insertOrders(db, [under(2, 3)]), 1);
    assert.equal(await insertOrders(db, [under(1, 3)]), 1);
    assert.equal(await held(db, 'lim-o', 'olga'), 3);
    // Past the limit it was accepted under: refused, even though sale_limits was raised meanwhile.
    await upsertSaleLimit(db, 'lim-o', 10);
    await assert.rejects(insertOrders(db, [under(1, 3)]), limitViolation);
    // Accepted without a limit (0): no check; a record from before the field: sale_limits decides.
    assert.equal(await insertOrders(db, [under(5, 0)]), 1);
    assert.equal(await insertOrders(db, [record('lim-o', 'olga', 2)]), 1);
    await assert.rejects(insertOrders(db, [record('lim-o', 'olga', 1)]), limitViolation);
    assert.equal(await held(db, 'lim-o', 'olga'), 10);
  });

  test("down() removes the trigger, its function, sale_limits and the rows' limit column", async () => {
    const other = await createTestDatabase();
    const odb = createDatabase(other.url, { max: 2 });
    try {
      await migrateToLatest(odb);
      await orderLimitMigration.down(odb as Kysely<unknown>);
      await perUserLimitMigration.down(odb as Kysely<unknown>);
      const { rows } = await sql<{ n: number }>`
        select (select count(*) from pg_trigger where tgname = 'orders_per_user_limit')
             + (select count(*) from pg_proc where proname = 'orders_per_user_limit')
             + (select count(*) from information_schema.tables where table_name = 'sale_limits')
             + (select count(*) from information_schema.columns where table_name = 'orders' and column_name = 'per_user_limit') as n`.execute(
        odb,
      );
      assert.equal(Number(rows[0]?.n), 0);
    } finally {
      await odb.destroy();
      await other.drop();
    }
  });
});

describe('writer with the per-user limit backstop', () => {
  test('a job whose row would pass the limit fails with the limit in its reason; the rest of its batch is inserted', async () => {
    const redis = await RedisServer.start();
    const tdb = await createTestDatabase();
    const db = createDatabase(tdb.url);
    const queue = createOrderQueue(redis.url);
    let writer: OrderWriter | undefined;
    try {
      await migrateToLatest(db);
      await upsertSaleLimit(db, 'wl', 2);
      // The user already holds the limit (e.g. orders accepted through another path).
      await insertOrders(db, [record('wl', 'greedy', 2)]);
      const batch = Array.from({ length: 20 }, (_, i) => record('wl', `u${i}`, 2));
      const over = record('wl', 'greedy', 1);
      batch.splice(10, 0, over);
      await reserveIn(redis.client(), batch);
      await Promise.all(batch.map((r) => enqueueOrder(queue, r)));
      writer = new OrderWriter({
        ...loadSection('writer', {}),
        connection: redis.url,
        db,
        batchSize: 30,
        batchMaxWaitMs: 50,
      });

      const counts = () => queue.getJobCounts('waiting', 'active', 'delayed', 'completed', 'failed');
      await until(
        '20 jobs completed and 1 failed',
        async () => {
          const c = await counts();
          return c.completed === 20 && c.failed === 1;
        },
        { describe: async () => JSON.stringify(await counts()) },
      );
      assert.equal(await countOrders(db, 'wl'), 21, 'the 20 others and the earlier row');
      assert.equal(await held(db, 'wl', 'greedy'), 2);
      const failed = await queue.getJob(over.orderId);
      assert.equal(await failed?.getState(), 'failed');
      assert.match(failed?.failedReason ?? '', /rejected by Postgres: per-user limit exceeded.*limit 2/);
      assert.equal(failed?.attemptsMade, 1, 'not retried');
    } finally {
      await writer?.close();
      await queue.close();
      await db.destroy();
      await tdb.drop();
      await redis.stop();
    }
  });
});
