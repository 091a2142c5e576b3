// Admin view of what the writer could not persist, and the per-user limit kept in step with Postgres:
// GET /admin/products/:productId lists the product's failed order jobs (poison jobs with their reason),
// and PUT /admin/products/:productId mirrors perUserLimit into sale_limits (the Postgres backstop).
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { until } from '../harness/async.ts';
import { admin, call, createSale, type Reply } from '../harness/service.ts';
import { shardStockKey } from '../src/inventory/keys.ts';
import type { OrderRecord } from '../src/orders/order.ts';
import { createOrderQueue } from '../src/orders/queue.ts';
import { useService } from './support/suite.ts';

interface FailedJobsBody {
  count: number;
  recent: { orderId: string; reason: string; failedAt: string | null }[];
  scanned: number;
  truncated: boolean;
}

describe('admin: failed jobs on the status, per-user limit mirrored to Postgres', () => {
  const { infra, svc } = useService();

  const status = (productId: string) =>
    call(svc.url, 'GET', `/admin/products/${productId}`, undefined, admin);

  it('a poison job lands in the failed set and shows on its product status with the reason', async () => {
    const gen = await createSale(svc.url, 'poisoned', { stock: 5, shards: 1 });
    await createSale(svc.url, 'clean', { stock: 5, shards: 1 });
    const before = await status('poisoned');
    assert.equal(before.status, 200);
    assert.deepEqual(before.body.failedJobs, { count: 0, recent: [], scanned: 0, truncated: false });

    const queue = createOrderQueue(infra.env.REDIS_URL as string);
    const orderId = `poisoned.${gen}.0.${'ab'.repeat(12)}`;
    try {
      const poison = {
        orderId,
        productId: 'poisoned',
        userId: 'mallory',
        quantity: 'x',
        shardKey: shardStockKey('poisoned', gen, 0),
        generation: gen,
        shardIndex: 0,
        token: 1,
        reservedAt: Date.now(),
      };
      await queue.add('order', poison as unknown as OrderRecord, { jobId: orderId });
      await until('the poison job to fail', async () => (await queue.getJobState(orderId)) === 'failed', {
        describe: () => queue.getJobState(orderId),
      });
    } finally {
      await queue.close();
    }

    const after: Reply = await status('poisoned');
    assert.equal(after.status, 200);
    const failed = after.body.failedJobs as FailedJobsBody;
    assert.equal(failed.count, 1);
    assert.equal(failed.scanned, 1);
    assert.equal(failed.truncated, false);
    assert.equal(failed.recent.length, 1);
    assert.equal(failed.recent[0]?.orderId, orderId);
    assert.match(failed.recent[0]?.reason ?? '', /invalid order data: .*quantity/);
    assert.ok(!Number.isNaN(Date.parse(failed.recent[0]?.failedAt ?? '')), 'failedAt is a date');
    // The existing status fields are unchanged.
    for (const key of [
      'productId',
      'generation',
      'total',
      'available',
      'sold',
      'reserved',
      'confirmed',
      'shards',
    ]) {
      assert.ok(key in after.body, `status keeps ${key}`);
    }
    assert.deepEqual([after.body.available, after.body.sold, after.body.total], [5, 0, 5]);
    // Another product's status does not show it.
    const other = (await status('clean')).body.failedJobs as FailedJobsBody;
    assert.deepEqual([other.count, other.recent, other.scanned], [0, [], 1]);
  });

  it('PUT /admin/products/:id mirrors perUserLimit into sale_limits (0 when not set)', async () => {
    const limitOf = async (productId: string) => {
      const r = await infra.pool.query('select per_user_limit from sale_limits where product_id = $1', [
        productId,
      ]);
      return (r.rows[0] as { per_user_limit: number } | undefined)?.per_user_limit;
    };
    await createSale(svc.url, 'mirrored', { stock: 10, shards: 2, perUserLimit: 2 });
    assert.equal(await limitOf('mirrored'), 2);
    const again = await call(svc.url, 'PUT', '/admin/products/mirrored', { stock: 10, shards: 2 }, admin);
    assert.equal(again.status, 200, JSON.stringify(again.body));
    assert.equal(await limitOf('mirrored'), 0);
    // A refused PUT changes nothing.
    const bad = await call(
      svc.url,
      'PUT',
      '/admin/products/mirrored',
      { stock: -1, shards: 2, perUserLimit: 5 },
      admin,
    );
    assert.equal(bad.status, 400);
    assert.equal(await limitOf('mirrored'), 0);
  });
});
