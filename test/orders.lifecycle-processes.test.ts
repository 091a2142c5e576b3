// Pay or expire across processes: a sold-out product gets units back by expiry and every API process
// sells them again (its sold-out flag cleared by the `returned` event); expiry goes on while the writer
// is killed (kill -9) or every API process is, and each fate is recorded exactly once after recovery.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { until } from '../harness/async.ts';
import { ordered } from '../harness/buyers.ts';
import { call, createSale, placeOrder, type Spawned, spawnService } from '../harness/service.ts';
import { history, pay, rowUnits, settled } from './support/lifecycle.ts';
import { useInfra } from './support/suite.ts';

const { infra } = useInfra();
const ENV = { EXPIRY_INTERVAL_MS: '50', SWEEP_AGE_MS: '1000', SWEEP_INTERVAL_MS: '200' };

const statusOf = async (url: string, orderId: string) =>
  (await call(url, 'GET', `/api/orders/${orderId}`)).body.status as string;
const saleHash = async (productId: string) => infra.client.hgetall(`sale:{${productId}}`);

describe('several processes', () => {
  let api1: Spawned;
  let api2: Spawned;
  let worker: Spawned;
  before(async () => {
    [api1, api2, worker] = await Promise.all([
      spawnService(infra, 'api', ENV),
      spawnService(infra, 'api', ENV),
      spawnService(infra, 'worker', ENV),
    ]);
  });
  after(async () => {
    await Promise.all([api1?.stop(), api2?.stop(), worker?.stop()]);
  });

  it('a sold-out product gets units back by expiry and every process sells them again', async () => {
    const P = 'back-1';
    await createSale(api1.url, P, { stock: 4, shards: 2, paymentTimeoutSec: 1 });
    const unpaid = [await ordered(api1.url, P, 'a1', 2), await ordered(api2.url, P, 'a2', 2)];
    // Both processes find it sold out (and remember it: their in-process flag).
    for (const api of [api1, api2]) {
      for (let i = 0; i < 2; i++) {
        const r = await placeOrder(api.url, { productId: P, userId: 'late' });
        assert.equal(r.body.error, 'sold_out', JSON.stringify(r.body));
      }
    }
    for (const id of unpaid) {
      await until(`${id} expired`, async () => (await statusOf(api1.url, id)) === 'expired', {
        timeoutMs: 60_000,
      });
    }
    // Every process sells the 4 returned units again (two each): no stuck sold-out flag anywhere.
    const again: string[] = [];
    for (const [i, api] of [api1, api2, api1, api2].entries()) {
      const id = await until(`process ${i % 2} to sell again`, async () => {
        const r = await placeOrder(api.url, { productId: P, userId: `b${i}` });
        if (r.status === 202) return r.body.orderId as string;
        assert.equal(r.body.error, 'sold_out', JSON.stringify(r.body));
        return undefined;
      });
      again.push(id);
      assert.equal((await pay(api.url, id, `b${i}`)).status, 200);
    }
    const s = await settled(api1.url, infra.client, P);
    assert.deepEqual([s.sold, s.paid, s.available, s.returned, s.total], [4, 4, 0, 4, 4]);
  });

  it('expiry while the writer is killed (kill -9): fates recorded exactly once after it comes back', async () => {
    const P = 'wkill-1';
    await createSale(api1.url, P, { stock: 6, shards: 1, paymentTimeoutSec: 1 });
    await worker.kill();
    const ids = [await ordered(api1.url, P, 'c1', 2), await ordered(api2.url, P, 'c2', 1)];
    const paid = await ordered(api1.url, P, 'c3', 3);
    assert.equal((await pay(api1.url, paid, 'c3')).status, 200);
    // No writer: the orders are reservations only, and still expire (the API processes sweep).
    for (const id of ids) {
      await until(`${id} expired`, async () => (await statusOf(api2.url, id)) === 'expired', {
        timeoutMs: 60_000,
      });
    }
    await until(
      'the units back on sale',
      async () => (await call(api1.url, 'GET', `/api/products/${P}`)).body.available === 3,
    );
    assert.equal(await infra.rows(P), 0, 'nothing persisted while the writer is down');
    worker = await spawnService(infra, 'worker', ENV);
    const s = await settled(api1.url, infra.client, P);
    assert.deepEqual([s.sold, s.paid, s.available, s.returned], [3, 3, 3, 3]);
    assert.deepEqual(s.orders, { paid: 1, expired: 2, cancelled: 0 });
    assert.deepEqual(await rowUnits(infra.pool, P), { expired: 3, paid: 3 });
    for (const id of ids)
      assert.deepEqual(await history(infra.pool, id), ['reserved', 'confirmed', 'expired']);
    assert.equal((await saleHash(P)).expired, '2');
  });

  it('expiry while every API process is killed (kill -9): the worker expires, exactly once', async () => {
    const P = 'akill-1';
    await createSale(api1.url, P, { stock: 5, shards: 1, paymentTimeoutSec: 1 });
    const ids = [await ordered(api1.url, P, 'd1', 2), await ordered(api2.url, P, 'd2', 3)];
    await Promise.all([api1.kill(), api2.kill()]);
    await until(
      'the worker to expire both and put 5 units back',
      async () => {
        const h = await saleHash(P);
        return h.expired === '2' && h.returning === '0' && h.returned === '5';
      },
      { timeoutMs: 60_000 },
    );
    [api1, api2] = await Promise.all([spawnService(infra, 'api', ENV), spawnService(infra, 'api', ENV)]);
    const s = await settled(api1.url, infra.client, P);
    assert.deepEqual([s.sold, s.available, s.returned, s.total], [0, 5, 5, 5]);
    assert.deepEqual(s.orders, { paid: 0, expired: 2, cancelled: 0 });
    for (const id of ids) assert.equal(await statusOf(api2.url, id), 'expired');
    // Sold again through the new processes.
    await ordered(api2.url, P, 'd3', 5);
  });
});
