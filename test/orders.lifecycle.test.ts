// Pay or expire over HTTP: pay (idempotent), cancel (units back on sale, the buyer's claim given back),
// expiry of unpaid orders past their deadline by Redis' clock, the status history in Postgres, and bad
// input that changes nothing. Expiry is waited for on observable state, never slept for.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { redisNow, until } from '../harness/async.ts';
import { admin, call, createSale, placeOrder } from '../harness/service.ts';
import { cancel, history, pay, rowUnits, settled } from './support/lifecycle.ts';
import { diffSnapshots, snapshotRedis } from './support/redis-snapshot.ts';
import { useService } from './support/suite.ts';

const { infra, svc } = useService({ EXPIRY_INTERVAL_MS: '50', LOG_LEVEL: 'error' });

const order = async (productId: string, userId: string, quantity = 1) => {
  const r = await placeOrder(svc.url, { productId, userId, quantity });
  assert.equal(r.status, 202, JSON.stringify(r.body));
  return r.body.orderId as string;
};
const statusOf = async (orderId: string) =>
  (await call(svc.url, 'GET', `/api/orders/${orderId}`)).body.status as string;
const available = async (productId: string) =>
  (await call(svc.url, 'GET', `/api/products/${productId}`)).body.available as number;

describe('pay and cancel', () => {
  it('pays once: paying again answers the same, cancelling a paid order is refused', async () => {
    await createSale(svc.url, 'pay-1', { stock: 5, shards: 2, paymentTimeoutSec: 3600 });
    const product = await call(svc.url, 'GET', '/api/products/pay-1');
    assert.equal(product.body.paymentTimeoutSec, 3600);
    const id = await order('pay-1', 'alice', 2);
    const view = await call(svc.url, 'GET', `/api/orders/${id}`);
    assert.equal(typeof view.body.payBy, 'number');
    for (let i = 0; i < 2; i++) {
      const r = await pay(svc.url, id, 'alice');
      assert.deepEqual([r.status, r.body], [200, { orderId: id, status: 'paid' }]);
    }
    const c = await cancel(svc.url, id, 'alice');
    assert.deepEqual([c.status, c.body.error], [409, 'already_paid']);
    assert.equal(await statusOf(id), 'paid');
    const s = await settled(svc.url, infra.client, 'pay-1');
    assert.deepEqual([s.sold, s.paid, s.available, s.total], [2, 2, 3, 5]);
    assert.deepEqual((s.orders as Record<string, number>).paid, 1);
    assert.deepEqual(await history(infra.pool, id), ['reserved', 'confirmed', 'paid']);
  });

  it('cancel puts exactly the units back on sale and gives the claim back; paying it then is refused', async () => {
    await createSale(svc.url, 'cancel-1', { stock: 3, shards: 1, perUserLimit: 3, paymentTimeoutSec: 3600 });
    const id = await order('cancel-1', 'bob', 3);
    assert.equal(await available('cancel-1'), 0);
    const refused = await placeOrder(svc.url, { productId: 'cancel-1', userId: 'carol' });
    assert.equal(refused.body.error, 'sold_out');
    for (let i = 0; i < 2; i++) {
      const r = await cancel(svc.url, id, 'bob');
      assert.deepEqual([r.status, r.body], [200, { orderId: id, status: 'cancelled' }]);
    }
    // Back on sale as the cancel answers: exactly the order's 3 units.
    assert.equal(await available('cancel-1'), 3);
    const p = await pay(svc.url, id, 'bob');
    assert.deepEqual([p.status, p.body.error], [409, 'order_cancelled']);
    const s = await settled(svc.url, infra.client, 'cancel-1');
    assert.deepEqual([s.sold, s.available, s.returned, s.total], [0, 3, 3, 3]);
    assert.deepEqual(await history(infra.pool, id), ['reserved', 'confirmed', 'cancelled']);
    // The claim is back once the row says cancelled: bob can buy his 3 again, and this process sells them.
    const again = await order('cancel-1', 'bob', 3);
    assert.notEqual(again, id);
    const end = await settled(svc.url, infra.client, 'cancel-1');
    assert.deepEqual([end.sold, end.available], [3, 0]);
    assert.deepEqual(await rowUnits(infra.pool, 'cancel-1'), { cancelled: 3, confirmed: 3 });
  });

  it('a sale without paymentTimeoutSec needs no payment: orders end confirmed and never expire', async () => {
    await createSale(svc.url, 'nopay-1', { stock: 2, shards: 1 });
    const id = await order('nopay-1', 'dan');
    await until('the order to be confirmed', async () => (await statusOf(id)) === 'confirmed');
    assert.equal(await infra.client.exists('sale:{nopay-1}:due'), 0);
    const r = await pay(svc.url, id, 'dan');
    assert.deepEqual([r.status, r.body.status], [200, 'paid']);
  });
});

describe('expiry', () => {
  it('an unpaid order expires at its deadline: exactly its units go back, and the next buyer gets them', async () => {
    await createSale(svc.url, 'exp-1', { stock: 4, shards: 1, paymentTimeoutSec: 1 });
    const paid = await order('exp-1', 'erin', 1);
    const unpaid = await order('exp-1', 'frank', 3);
    assert.equal((await pay(svc.url, paid, 'erin')).status, 200);
    assert.equal((await placeOrder(svc.url, { productId: 'exp-1', userId: 'gus' })).body.error, 'sold_out');
    await until('the unpaid order to expire', async () => (await statusOf(unpaid)) === 'expired', {
      timeoutMs: 60_000,
    });
    await until('its units back on sale', async () => (await available('exp-1')) === 3);
    const late = await pay(svc.url, unpaid, 'frank');
    assert.deepEqual([late.status, late.body.error], [409, 'order_expired']);
    assert.equal(await statusOf(paid), 'paid');
    // The next buyer (of a process that had answered sold out) gets them.
    const next = await order('exp-1', 'gus', 3);
    assert.equal((await pay(svc.url, next, 'gus')).status, 200);
    const s = await settled(svc.url, infra.client, 'exp-1');
    assert.deepEqual([s.sold, s.paid, s.available, s.returned, s.total], [4, 4, 0, 3, 4]);
    assert.deepEqual(s.orders, { paid: 2, expired: 1, cancelled: 0 });
    assert.deepEqual(await history(infra.pool, unpaid), ['reserved', 'confirmed', 'expired']);
  });

  it('paying just before the deadline wins; paying at or after it is refused (Redis clock)', async () => {
    await createSale(svc.url, 'exp-2', { stock: 2, shards: 1, paymentTimeoutSec: 2 });
    const id = await order('exp-2', 'hal');
    const view = await call(svc.url, 'GET', `/api/orders/${id}`);
    const payBy = view.body.payBy as number;
    await until('Redis to pass the deadline', async () => (await redisNow(infra.client)) >= payBy);
    const r = await pay(svc.url, id, 'hal');
    assert.deepEqual([r.status, r.body.error], [409, 'order_expired']);
    await settled(svc.url, infra.client, 'exp-2');
  });
});

describe('bad input', () => {
  it('unknown order, another buyer, malformed id, wrong types: a clear 4xx and nothing changes', async () => {
    await createSale(svc.url, 'bad-1', { stock: 2, shards: 1, paymentTimeoutSec: 3600 });
    const id = await order('bad-1', 'ivy');
    await settled(svc.url, infra.client, 'bad-1');
    // BullMQ's own timers (the writer's stalled-job check) touch bull:* keys whatever the requests do.
    const notBull = { exclude: (key: string) => key.startsWith('bull:') };
    const before = await snapshotRedis(infra.client, notBull);
    const rowsBefore = await infra.rows();
    const unknown = id.replace(/\.[0-9a-f]{24}$/, `.${'0'.repeat(24)}`);
    const cases: [string, string, unknown, number, string][] = [
      ['pay', unknown, { userId: 'ivy' }, 404, 'unknown_order'],
      ['cancel', unknown, { userId: 'ivy' }, 404, 'unknown_order'],
      ['pay', id, { userId: 'mallory' }, 404, 'unknown_order'],
      ['cancel', id, { userId: 'mallory' }, 404, 'unknown_order'],
      ['pay', 'not-an-order', { userId: 'ivy' }, 404, 'unknown_order'],
      ['cancel', '..%7B%7D', { userId: 'ivy' }, 404, 'unknown_order'],
      ['pay', id, { userId: 7 }, 400, 'invalid_request'],
      ['pay', id, {}, 400, 'invalid_request'],
      ['cancel', id, { userId: ['ivy'] }, 400, 'invalid_request'],
      ['cancel', id, { userId: 'a b' }, 400, 'invalid_request'],
      ['pay', id, 'ivy', 400, 'invalid_request'],
      ['pay', id, '{"userId":', 400, 'invalid_request'],
    ];
    for (const [action, orderId, body, status, error] of cases) {
      const r = await call(svc.url, 'POST', `/api/orders/${orderId}/${action}`, body);
      assert.deepEqual(
        [r.status, r.body.error],
        [status, error],
        `${action} ${orderId} ${JSON.stringify(body)}`,
      );
    }
    const product = await call(
      svc.url,
      'PUT',
      '/admin/products/bad-2',
      { stock: 1, shards: 1, paymentTimeoutSec: -1 },
      admin,
    );
    assert.deepEqual([product.status, product.body.field], [400, 'paymentTimeoutSec']);
    assert.deepEqual(diffSnapshots(before, await snapshotRedis(infra.client, notBull)), []);
    assert.equal(await infra.rows(), rowsBefore);
    assert.equal(await statusOf(id), 'confirmed');
  });
});
