// Batch jobs (many orders of one API process in one BullMQ job): the hand-off packs concurrent orders
// into few jobs; the writer persists a batch with poison orders, re-delivered, or half persisted already.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { sql } from 'kysely';
import { until } from '../harness/async.ts';
import { countOrders, existingOrderIds, insertOrders } from '../src/db/orders-repo.ts';
import { failedJobsOf } from '../src/orders/failed-jobs.ts';
import { HandOff } from '../src/orders/hand-off.ts';
import type { OrderRecord } from '../src/orders/order.ts';
import { enqueueOrders, isOrderBatch } from '../src/orders/queue.ts';
import { order, orders, PRODUCT, pendingOf, useWorld } from './support/writer-world.ts';

const { world, waitUntilDrained } = useWorld();

/** The order ids each job of the queue carries, by job id. */
async function jobsAndOrders(): Promise<Map<string, string[]>> {
  const jobs = await world.queue.getJobs(['waiting', 'active', 'completed', 'failed', 'delayed'], 0, -1);
  return new Map(
    jobs.map((j) => [
      String(j.id),
      isOrderBatch(j.data) ? (j.data.orders as OrderRecord[]).map((o) => o.orderId) : [j.data.orderId],
    ]),
  );
}

describe('batched hand-off', () => {
  test('200 concurrent orders travel in fewer jobs, each order in exactly one', async () => {
    const records = orders(200);
    await world.reserve(records);
    const handOff = new HandOff(world.queue, { maxBatch: 64, maxWaitMs: 20 });
    await Promise.all(records.map((r) => handOff.send(r)));
    await handOff.close();
    const jobs = await jobsAndOrders();
    const carried = [...jobs.values()].flat();
    assert.equal(carried.length, 200, 'no order sent twice');
    assert.deepEqual(new Set(carried), new Set(records.map((r) => r.orderId)), 'no order left out');
    assert.ok(jobs.size <= 200 / 10, `${jobs.size} jobs for 200 orders`);
    assert.ok(
      [...jobs.values()].every((ids) => ids.length <= 64),
      'no job holds more than maxBatch',
    );
    world.start();
    await waitUntilDrained(200);
    assert.equal((await world.counts()).failed, 0);
  });

  test('a batch with poison orders persists the others; each poison order fails alone', async () => {
    await sql`alter table orders add constraint no_banned_user check (user_id <> 'banned')`.execute(world.db);
    const records = orders(30);
    const banned = { ...order(10), userId: 'banned' };
    records[10] = banned;
    const invalid = { ...order(20), quantity: 'x' } as unknown as OrderRecord;
    records[20] = invalid;
    await world.reserve(records);
    await enqueueOrders(world.queue, records);
    world.start();

    await until('28 rows, the batch done and two failed jobs', async () => {
      const counts = await world.counts();
      return (await countOrders(world.db, PRODUCT)) === 28 && counts.failed === 2 && pendingOf(counts) === 0;
    });
    const batch = await world.queue.getJob(`batch.${records[0]?.orderId}`);
    assert.equal(await batch?.getState(), 'completed');
    const rejected = await world.queue.getJob(banned.orderId);
    assert.match(rejected?.failedReason ?? '', /rejected by Postgres: .*no_banned_user/);
    const malformed = await world.queue.getJob(invalid.orderId);
    assert.match(malformed?.failedReason ?? '', /invalid order data: .*quantity/);
    const shown = await failedJobsOf(world.queue, PRODUCT);
    assert.deepEqual(new Set(shown.recent.map((f) => f.orderId)), new Set([banned.orderId, invalid.orderId]));
    assert.deepEqual(
      await world.reservationsLeft(),
      new Set([banned.orderId, invalid.orderId]),
      'only the poison orders stay reserved',
    );
  });

  test('a batch delivered again (after a writer crash) adds no row and completes', async () => {
    const records = orders(40);
    await world.reserve(records);
    await enqueueOrders(world.queue, records);
    world.start();
    await waitUntilDrained(40);
    // The same orders again under another job id: what a retaken job of a crashed writer carries.
    await world.queue.add('batch', { orders: records }, { jobId: 'redelivered' });
    const again = await world.queue.getJob('redelivered');
    await until('the re-delivered batch to complete', async () => (await again?.getState()) === 'completed');
    assert.equal(await countOrders(world.db, PRODUCT), 40);
    assert.equal((await world.counts()).failed, 0);
    assert.deepEqual(await world.reservationsLeft(), new Set());
  });

  test('a batch half persisted already becomes every row exactly once', async () => {
    const records = orders(50);
    await world.reserve(records);
    await insertOrders(world.db, records.slice(0, 25));
    await enqueueOrders(world.queue, records);
    world.start();
    await waitUntilDrained(50);
    const ids = await existingOrderIds(
      world.db,
      records.map((r) => r.orderId),
    );
    assert.equal(ids.size, 50);
    assert.equal(
      world.batches.reduce((a, b) => a + b.inserted, 0),
      25,
      'only the missing half was inserted',
    );
    assert.deepEqual(await world.reservationsLeft(), new Set(), 'every reservation cleared');
  });
});
