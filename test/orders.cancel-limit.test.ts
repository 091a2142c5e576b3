// A cancel's 200 comes with the buyer's per-user limit already given back (issue 37): the buyer who
// was told "cancelled" may order again at once, not after the next expiry sweep (here: never).
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { until } from '../harness/async.ts';
import { call, createSale, placeOrder } from '../harness/service.ts';
import { cancel } from './support/lifecycle.ts';
import { useService } from './support/suite.ts';

// No sweep within the test: whatever gives the limit back is the cancel itself.
const { svc } = useService({ EXPIRY_INTERVAL_MS: '3600000' });

describe('cancel and the per-user limit', () => {
  it('right after the 200 of a cancel, the buyer orders again within a limit of one', async () => {
    await createSale(svc.url, 'again', { stock: 5, shards: 1, perUserLimit: 1, paymentTimeoutSec: 3600 });
    const first = await placeOrder(svc.url, { productId: 'again', userId: 'zoe' });
    assert.equal(first.status, 202);
    const id = first.body.orderId as string;
    // Its row written (the writer's confirmation), as an order is well before its buyer cancels it.
    await until('the order confirmed', async () => {
      const r = await call(svc.url, 'GET', `/api/orders/${id}`);
      return r.body.status === 'confirmed';
    });
    const over = await placeOrder(svc.url, { productId: 'again', userId: 'zoe' });
    assert.deepEqual([over.status, over.body.error], [409, 'limit_exceeded']);
    const cancelled = await cancel(svc.url, id, 'zoe');
    assert.deepEqual([cancelled.status, cancelled.body.status], [200, 'cancelled']);
    const again = await placeOrder(svc.url, { productId: 'again', userId: 'zoe' });
    assert.equal(again.status, 202, JSON.stringify(again.body));
    const third = await placeOrder(svc.url, { productId: 'again', userId: 'zoe' });
    assert.deepEqual([third.status, third.body.error], [409, 'limit_exceeded'], 'the limit still holds');
  });

  it("another buyer's cancel and pay answer 404 unknown_order, as GET does, and change nothing", async () => {
    await createSale(svc.url, 'theirs', { stock: 5, shards: 1, paymentTimeoutSec: 3600 });
    const placed = await placeOrder(svc.url, { productId: 'theirs', userId: 'owner' });
    const id = placed.body.orderId as string;
    const missing = id.replace(/\.[0-9a-f]{24}$/, `.${'0'.repeat(24)}`);
    for (const action of ['cancel', 'pay']) {
      const theirs = await call(svc.url, 'POST', `/api/orders/${id}/${action}`, { userId: 'mallory' });
      const none = await call(svc.url, 'POST', `/api/orders/${missing}/${action}`, { userId: 'mallory' });
      assert.deepEqual([theirs.status, theirs.body.error], [404, 'unknown_order'], action);
      assert.equal(none.status, theirs.status);
    }
    const status = (await call(svc.url, 'GET', `/api/orders/${id}`)).body.status;
    assert.ok(status === 'reserved' || status === 'confirmed', String(status));
  });
});
