// The order path over HTTP under a storm: 2,000 concurrent orders for 500 units over 8 shards sell
// exactly the stock, one row per accepted order, nothing left reserved.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { admin, call, createSale, drained, placeOrder } from './support/service.ts';
import { useService } from './support/suite.ts';

const { infra, svc } = useService();

describe('order path over HTTP', () => {
  it('2,000 concurrent orders for 500 units over 8 shards: exactly 500 accepted, 500 rows, 0 left', async () => {
    await createSale(svc.url, 'storm', { stock: 500, shards: 8 });
    const statuses = new Map<number, number>();
    const inFlight = 400;
    let next = 0;
    await Promise.all(
      Array.from({ length: inFlight }, async () => {
        while (next < 2000) {
          const i = next++;
          // 400 at once is over the admission limit: shed orders come back, as real clients do.
          const r = await placeOrder(svc.url, { productId: 'storm', userId: `u${i}` });
          statuses.set(r.status, (statuses.get(r.status) ?? 0) + 1);
        }
      }),
    );
    assert.equal(statuses.get(202), 500, JSON.stringify([...statuses]));
    assert.equal(statuses.get(409), 1500, JSON.stringify([...statuses]));
    const status = await drained(svc.url, 'storm');
    assert.equal(status.available, 0);
    assert.equal(status.sold, 500);
    assert.equal(status.confirmed, 500);
    assert.equal(await infra.rows('storm'), 500);
    const rec = await call(svc.url, 'GET', '/admin/products/storm/reconcile', undefined, admin);
    assert.equal(rec.body.ok, true, JSON.stringify(rec.body));
  });
});
