// Invariant 9, no phantom sold-out: an order for q units is served while the sale holds q in all,
// however they are spread over shards; the units left are gathered into one shard by a live reshard
// when no single shard holds the order. Conservation holds across it.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { admin, call, createSale, drained } from './support/service.ts';
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
    assert.deepEqual([tooMany.status, tooMany.body.error], [409, 'sold_out'], 'only 1 left');
    const last = await order('lots', 'last', 1);
    assert.equal(last.status, 202, JSON.stringify(last.body));
    const s = await drained(svc.url, 'lots');
    assert.deepEqual([s.available, s.sold, s.total], [0, 10, 10]);
    assert.equal(await infra.rows('lots'), 3);
    const rec = await call(svc.url, 'GET', '/admin/products/lots/reconcile', undefined, admin);
    assert.equal(rec.body.ok, true, JSON.stringify(rec.body));
  });
});
