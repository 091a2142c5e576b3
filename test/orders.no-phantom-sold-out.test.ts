// Invariant 9, no phantom sold-out: an order for q units is served while the sale holds q in all,
// however they are spread over shards; the units left are regrouped by a live reshard into as many
// shards as still hold the order each when no single shard holds it. Conservation holds across it.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { admin, call, createSale, drained } from '../harness/service.ts';
import { useService } from './support/suite.ts';

const { infra, svc } = useService();

const order = (productId: string, userId: string, quantity: number) =>
  call(svc.url, 'POST', '/api/orders', { productId, userId, quantity });

describe('no phantom sold-out', () => {
  it('a 5-unit order on a 10-unit sale over 8 shards is served, and so is every order that fits', async () => {
    await createSale(svc.url, 'lots', { stock: 10, shards: 8 });
    const five = await order('lots', 'big', 5);
    assert.equal(five.status, 202, JSON.stringify(five.body));
    // 5 left, in whatever lots: a 4 and then a 1 both fit the total, so both are served.
    const four = await order('lots', 'four', 4);
    assert.equal(four.status, 202, JSON.stringify(four.body));
    const tooMany = await order('lots', 'greedy', 2);
    // Not sold out: 1 is left, and the answer says so (a smaller order is still served).
    assert.deepEqual(
      [tooMany.status, tooMany.body.error, tooMany.body.available, tooMany.body.quantity],
      [409, 'insufficient_stock', 1, 2],
      'only 1 left',
    );
    const view = await call(svc.url, 'GET', '/api/products/lots');
    assert.deepEqual([view.body.available, view.body.soldOut], [1, false], 'the product view agrees');
    const last = await order('lots', 'last', 1);
    assert.equal(last.status, 202, JSON.stringify(last.body));
    const s = await drained(svc.url, 'lots');
    assert.deepEqual([s.available, s.sold, s.total], [0, 10, 10]);
    assert.equal(await infra.rows('lots'), 3);
    const rec = await call(svc.url, 'GET', '/admin/products/lots/reconcile', undefined, admin);
    assert.equal(rec.body.ok, true, JSON.stringify(rec.body));
  });

  it('regroups into as many shards as still hold the order each, not into one', async () => {
    await createSale(svc.url, 'regroup', { stock: 10, shards: 8 });
    // 10 units over 8 shards: lots of 1 and 2. An order for 3 fits the total and no lot.
    const three = await order('regroup', 'three', 3);
    assert.equal(three.status, 202, JSON.stringify(three.body));
    // Regrouped over floor(10 / 3) = 3 shards (4 + 3 + 3), then 3 taken from one of them.
    const status = await call(svc.url, 'GET', '/admin/products/regroup', undefined, admin);
    const lots = (status.body.shards as { stock: number }[]).map((s) => s.stock);
    assert.equal(lots.length, 3, JSON.stringify(status.body));
    assert.equal(
      lots.reduce((a, b) => a + b, 0),
      7,
    );
    const s = await drained(svc.url, 'regroup');
    assert.deepEqual([s.available, s.sold, s.total], [7, 3, 10]);
  });
});
