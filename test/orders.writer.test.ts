// The BullMQ writer against a private redis-server and a fresh Postgres database per test: batching,
// idempotency, Postgres outages, poison jobs, rejected rows, graceful close.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { sql } from 'kysely';
import { until } from '../harness/async.ts';
import { freePort } from '../harness/redis-server.ts';
import { createDatabase } from '../src/db/database.ts';
import { countOrders, existingOrderIds, findOrder, sumQuantity } from '../src/db/orders-repo.ts';
import type { OrderRecord } from '../src/orders/order.ts';
import { enqueueOrder } from '../src/orders/queue.ts';
import { order, orders, PRODUCT, pendingOf, useWorld } from './support/writer-world.ts';

const { world, waitUntilDrained } = useWorld();

describe('writer', () => {
  test('1,000 jobs become 1,000 rows in multi-row batches and their reservations are cleared', async () => {
    const records = orders(1000);
    await world.reserve(records);
    assert.equal((await world.reservationsLeft()).size, 1000);
    await Promise.all(records.map((r) => enqueueOrder(world.queue, r)));
    world.start();

    await waitUntilDrained(1000);
    assert.equal(
      await sumQuantity(world.db, PRODUCT),
      records.reduce((s, r) => s + r.quantity, 0),
    );
    assert.deepEqual(await world.reservationsLeft(), new Set());
    const counts = await world.counts();
    assert.equal(counts.failed, 0);
    assert.equal(counts.completed, 1000);

    const sizes = world.batches.map((b) => b.size);
    assert.equal(
      sizes.reduce((a, b) => a + b, 0),
      1000,
    );
    assert.equal(
      world.batches.reduce((a, b) => a + b.inserted, 0),
      1000,
    );
    assert.ok(Math.max(...sizes) > 1, `batches were single rows: ${sizes.join(',')}`);
    assert.ok(Math.max(...sizes) <= 100, 'batchSize is respected');
    assert.ok(world.batches.length < 1000 / 2, `${world.batches.length} batches for 1000 jobs`);
  });

  test('the same order delivered twice, or re-added after completion, is one row', async () => {
    const record = order(7);
    await world.reserve([record]);
    world.start();
    // Two jobs with different ids carrying one order (e.g. sweeper replay racing the API's enqueue).
    const a = await world.queue.add('order', record, { jobId: 'dup-a' });
    const b = await world.queue.add('order', record, { jobId: 'dup-b' });
    await until('both duplicates to complete', async () => {
      const states = await Promise.all([a.getState(), b.getState()]);
      return states.every((s) => s === 'completed');
    });
    assert.equal(await countOrders(world.db, PRODUCT), 1);

    // Re-adding the id of a kept completed job is a no-op in BullMQ...
    await enqueueOrder(world.queue, record);
    await until(
      'the order job to complete',
      async () => (await world.queue.getJobState(record.orderId)) === 'completed',
    );
    await enqueueOrder(world.queue, record);
    assert.equal(await world.queue.getJobState(record.orderId), 'completed');
    // ...and once that job has been removed, the re-added job is processed and hits ON CONFLICT.
    await world.queue.remove(record.orderId);
    const batchesBefore = world.batches.length;
    await enqueueOrder(world.queue, record);
    await until(
      'the re-added job to complete',
      async () => (await world.queue.getJobState(record.orderId)) === 'completed',
    );

    assert.equal(await countOrders(world.db, PRODUCT), 1);
    assert.equal(
      world.batches.reduce((s, b) => s + b.inserted, 0),
      1,
      'only the first delivery inserted',
    );
    assert.ok(world.batches.length > batchesBefore, 'the re-added job went through a batch');
    assert.equal(world.batches.at(-1)?.inserted, 0);
    assert.equal((await world.counts()).failed, 0);
    const stored = await findOrder(world.db, record.orderId);
    assert.equal(stored?.userId, record.userId);
  });

  test('Postgres down: jobs wait and retry, none fails, and all land once Postgres is back', async () => {
    const deadDb = createDatabase(`postgres://postgres@127.0.0.1:${await freePort()}/none`, {
      connectionTimeoutMillis: 1000,
    });
    world.extraDbs.push(deadDb);
    const records = orders(50);
    await world.reserve(records);
    await Promise.all(records.map((r) => enqueueOrder(world.queue, r)));
    const down = world.start({ db: deadDb });
    const pending = () => world.queue.getJobs(['delayed', 'waiting', 'active'], 0, -1);
    // Ordered by what the queue shows, not by a sleep: some job has been tried and retried.
    await until('the writer to retry a job', async () => (await pending()).some((j) => j.attemptsMade >= 2));

    let counts = await world.counts();
    assert.equal(counts.failed, 0, 'no job failed');
    assert.equal(counts.completed, 0);
    assert.equal(pendingOf(counts), 50, 'every job is still in the queue');
    const jobs = await pending();
    const retried = jobs.filter((j) => j.attemptsMade >= 2);
    assert.ok(retried.length > 0, 'the writer kept retrying');
    assert.ok(
      retried.every((j) => j.failedReason === 'Postgres is unavailable'),
      jobs[0]?.failedReason,
    );
    assert.equal(world.batches.length, 0);

    await down.close();
    counts = await world.counts();
    assert.equal(counts.active, 0, 'close left no job active');
    assert.equal(pendingOf(counts), 50);
    assert.equal((await world.reservationsLeft()).size, 50, 'reservations stay until rows exist');

    world.start();
    await waitUntilDrained(50);
    assert.equal((await world.counts()).failed, 0);
    assert.deepEqual(await world.reservationsLeft(), new Set());
  });

  test('a poison job fails at once with the field in its reason and blocks nothing', async () => {
    const good = orders(20);
    await world.reserve(good);
    await Promise.all(good.slice(0, 10).map((r) => enqueueOrder(world.queue, r)));
    const poison = { ...order(999), quantity: 'x' };
    await world.queue.add('order', poison as unknown as OrderRecord, { jobId: 'poison' });
    await Promise.all(good.slice(10).map((r) => enqueueOrder(world.queue, r)));
    world.start();

    await waitUntilDrained(20);
    const counts = await world.counts();
    assert.equal(counts.failed, 1);
    assert.equal(counts.completed, 20);
    const failed = await world.queue.getJob('poison');
    assert.equal(await failed?.getState(), 'failed');
    assert.match(failed?.failedReason ?? '', /invalid order data: .*quantity/);
    assert.equal(failed?.attemptsMade, 1, 'not retried');
    assert.deepEqual(await world.reservationsLeft(), new Set());
  });

  test('a row Postgres rejects fails alone; the rest of its batch is inserted', async () => {
    // Stands in for any data error zod cannot foresee: this database refuses one user.
    await sql`alter table orders add constraint no_banned_user check (user_id <> 'banned')`.execute(world.db);
    const records = orders(30);
    const banned = { ...order(15), userId: 'banned' };
    records[15] = banned;
    await world.reserve(records);
    await Promise.all(records.map((r) => enqueueOrder(world.queue, r)));
    world.start({ batchSize: 30, batchMaxWaitMs: 50 });

    await until('29 rows and one failed job', async () => {
      const counts = await world.counts();
      return (await countOrders(world.db, PRODUCT)) === 29 && counts.failed === 1 && pendingOf(counts) === 0;
    });
    const failed = await world.queue.getJob(banned.orderId);
    assert.match(failed?.failedReason ?? '', /rejected by Postgres: .*no_banned_user/);
    assert.equal(failed?.attemptsMade, 1, 'not retried');
    assert.deepEqual(await world.reservationsLeft(), new Set([banned.orderId]), 'its reservation is kept');
  });

  test('an order whose reservation is gone (a failover lost it) and has no row fails with the reason; its batch lands', async () => {
    // The reservation and the stock decrement replicate together: no reservation means the unit is
    // back in stock, so a row for it could sell that unit twice.
    const records = orders(20);
    const lost = records[7] as OrderRecord;
    await world.reserve(records.filter((r) => r !== lost));
    await Promise.all(records.map((r) => enqueueOrder(world.queue, r)));
    world.start({ batchSize: 20, batchMaxWaitMs: 50 });

    await until('19 rows and one failed job', async () => {
      const counts = await world.counts();
      return (await countOrders(world.db, PRODUCT)) === 19 && counts.failed === 1 && pendingOf(counts) === 0;
    });
    assert.equal(await findOrder(world.db, lost.orderId), undefined, 'no row for the lost reservation');
    const failed = await world.queue.getJob(lost.orderId);
    assert.match(failed?.failedReason ?? '', /reservation is gone from Redis/);
    assert.equal(failed?.attemptsMade, 1, 'not retried');
    assert.deepEqual(await world.reservationsLeft(), new Set());
  });

  test('close() while jobs flow leaves each job either done with a row or still queued', async () => {
    const records = orders(3000);
    await world.reserve(records);
    await world.queue.addBulk(records.map((r) => ({ name: 'order', data: r, opts: { jobId: r.orderId } })));
    const writer = world.start({ batchSize: 50 });
    await until('the first batch', async () => world.batches.length > 0);
    await writer.close();

    const rows = await existingOrderIds(
      world.db,
      records.map((r) => r.orderId),
    );
    assert.ok(rows.size > 0 && rows.size < records.length, `close came mid-flow (${rows.size} rows)`);
    const counts = await world.counts();
    assert.equal(counts.active, 0, 'no job is left active');
    assert.equal(counts.failed, 0);
    const queued = new Set(
      (await world.queue.getJobs(['waiting', 'delayed', 'prioritized'], 0, -1)).map((j) => j.id),
    );
    const reserved = await world.reservationsLeft();
    for (const { orderId } of records) {
      if (rows.has(orderId)) {
        assert.ok(!queued.has(orderId), `${orderId} has a row but is still queued`);
        assert.ok(!reserved.has(orderId), `${orderId} has a row but its reservation is left`);
      } else {
        assert.ok(queued.has(orderId), `${orderId} has no row and is not queued: lost`);
        assert.ok(reserved.has(orderId), `${orderId} lost its reservation without a row`);
      }
    }
    assert.equal(counts.completed, rows.size);

    world.start();
    await waitUntilDrained(records.length);
    assert.deepEqual(await world.reservationsLeft(), new Set());
  });
});
