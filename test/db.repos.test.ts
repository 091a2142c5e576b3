// Repositories over a migrated fresh database: idempotent batch insert, per-product totals,
// lookups, the audit trail's jsonb round trip, and the readiness probe.
import assert from 'node:assert/strict';
import { after, before, beforeEach, describe, test } from 'node:test';
import { type Kysely, sql } from 'kysely';
import { createTestDatabase, type TestDatabase } from '../harness/postgres.ts';
import { freePort } from '../harness/redis-server.ts';
import { writeAudit } from '../src/db/audit-repo.ts';
import { checkDatabase, createDatabase, type Database } from '../src/db/database.ts';
import { migrateToLatest } from '../src/db/migrate.ts';
import {
  countOrders,
  existingOrderIds,
  findOrder,
  insertOrders,
  MAX_ORDERS_PER_INSERT,
  recordFate,
  statusHistory,
  sumQuantity,
  unitsByStatus,
} from '../src/db/orders-repo.ts';
import { shardStockKey } from '../src/inventory/keys.ts';
import type { OrderRecord } from '../src/orders/order.ts';

const order = (n: number, productId = 'P1', quantity = 1): OrderRecord => ({
  orderId: `ord-${productId}-${n}`,
  productId,
  userId: `user-${n % 3}`,
  quantity,
  shardKey: shardStockKey(productId, 2, n % 4),
  generation: 2,
  shardIndex: n % 4,
  token: 9_007_199_254_740_000 + n,
  reservedAt: 1_700_000_000_000 + n,
});

describe('orders and audit repositories', () => {
  let tdb: TestDatabase;
  let db: Kysely<Database>;
  before(async () => {
    tdb = await createTestDatabase();
    db = createDatabase(tdb.url);
    await migrateToLatest(db);
  });
  after(async () => {
    await db.destroy();
    await tdb.drop();
  });
  beforeEach(async () => {
    await sql`truncate orders, admin_audit, order_status_history`.execute(db);
  });

  test('insertOrders inserts new rows in one statement and skips ids that exist', async () => {
    assert.equal(await insertOrders(db, [order(1), order(2, 'P1', 3)]), 2);
    assert.equal(await insertOrders(db, [order(2, 'P1', 3), order(3)]), 1, 'only ord-3 is new');
    assert.equal(await insertOrders(db, []), 0);
    assert.equal(await countOrders(db, 'P1'), 3);
    assert.equal(await sumQuantity(db, 'P1'), 5);
  });

  test('totals are per product and zero for a product without orders', async () => {
    await insertOrders(db, [order(1, 'A', 2), order(2, 'A', 2), order(3, 'B', 7)]);
    assert.equal(await countOrders(db, 'A'), 2);
    assert.equal(await sumQuantity(db, 'A'), 4);
    assert.equal(await sumQuantity(db, 'B'), 7);
    assert.equal(await countOrders(db, 'none'), 0);
    assert.equal(await sumQuantity(db, 'none'), 0);
  });

  test('findOrder returns the record as it was written', async () => {
    const record = order(42, 'P9', 4);
    await insertOrders(db, [record]);
    const found = await findOrder(db, record.orderId);
    assert.ok(found);
    const { createdAt, status, ...rest } = found;
    assert.deepEqual(rest, record);
    assert.equal(status, 'confirmed');
    assert.ok(createdAt instanceof Date);
    assert.equal(await findOrder(db, 'missing'), undefined);
  });

  test('recordFate moves a row once to its fate, replays are no-ops, and the history follows', async () => {
    const record = { ...order(7, 'F', 2), payBy: 1_800_000_000_000 };
    assert.equal(await recordFate(db, record.orderId, 'expired'), false, 'no row yet');
    await insertOrders(db, [record]);
    assert.equal((await findOrder(db, record.orderId))?.payBy, record.payBy);
    assert.equal(await recordFate(db, record.orderId, 'expired'), true);
    assert.equal(await recordFate(db, record.orderId, 'expired'), true, 'a replay');
    await assert.rejects(recordFate(db, record.orderId, 'paid'), /is expired in Postgres/);
    assert.deepEqual(
      (await statusHistory(db, record.orderId)).map((h) => h.status),
      ['reserved', 'confirmed', 'expired'],
    );
    assert.deepEqual(await unitsByStatus(db, 'F'), { confirmed: 0, paid: 0, expired: 2, cancelled: 0 });
    assert.equal(await sumQuantity(db, 'F'), 2);
  });

  test('existingOrderIds returns the subset that has rows', async () => {
    await insertOrders(db, [order(1), order(2)]);
    const ids = await existingOrderIds(db, [order(1).orderId, 'nope', order(2).orderId]);
    assert.deepEqual([...ids].sort(), [order(1).orderId, order(2).orderId]);
    assert.deepEqual(await existingOrderIds(db, []), new Set());
  });

  test('insertOrders refuses more rows than one statement can bind', async () => {
    const records = Array.from({ length: MAX_ORDERS_PER_INSERT + 1 }, (_, i) => order(i));
    await assert.rejects(insertOrders(db, records), RangeError);
  });

  test('writeAudit stores objects and arrays as jsonb', async () => {
    const id = await writeAudit(db, {
      actor: 'admin',
      action: 'restock',
      productId: 'P1',
      before: { stock: 10 },
      after: { stock: 15, shards: [5, 5, 5] },
      request: { delta: 5 },
    });
    await writeAudit(db, { actor: 'admin', action: 'noop' });
    const rows = await db.selectFrom('admin_audit').selectAll().orderBy('id').execute();
    assert.equal(rows.length, 2);
    assert.equal(rows[0]?.id, id);
    assert.deepEqual(rows[0]?.after, { stock: 15, shards: [5, 5, 5] });
    assert.deepEqual(rows[0]?.before, { stock: 10 });
    assert.equal(rows[0]?.product_id, 'P1');
    assert.equal(rows[1]?.before, null);
    assert.equal(rows[1]?.product_id, null);
    assert.ok(rows[1]?.at instanceof Date);
  });

  test('checkDatabase passes on a live server', async () => {
    await checkDatabase(db);
  });
});

test('checkDatabase throws UnavailableError when nothing listens', async () => {
  const dead = createDatabase(`postgres://postgres@127.0.0.1:${await freePort()}/none`);
  try {
    await assert.rejects(checkDatabase(dead), {
      name: 'UnavailableError',
      message: 'Postgres is unavailable',
    });
  } finally {
    await dead.destroy();
  }
});
