// The sale window over HTTP: before startsAt an order gets 409 not_started (with startsAt) and changes
// nothing, not even its Idempotency-Key; from the opening on, by Redis' clock, it is placed; from
// endsAt on, 409 sale_ended. Times come from Redis' TIME, and the tests wait for its clock, never sleep.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { until } from '../harness/async.ts';
import { admin, call, createSale, drained } from '../harness/service.ts';
import { diffSnapshots, snapshotRedis } from './support/redis-snapshot.ts';
import { useService } from './support/suite.ts';

const { infra, svc } = useService();

/** Redis' clock, in ms: the one clock the sale window is judged by. */
async function redisNow(): Promise<number> {
  const [seconds, micros] = await infra.client.time();
  return Number(seconds) * 1000 + Math.floor(Number(micros) / 1000);
}

const iso = (ms: number) => new Date(ms).toISOString();
const order = (productId: string, userId: string, headers: Record<string, string> = {}) =>
  call(svc.url, 'POST', '/api/orders', { productId, userId }, headers);

describe('sale window', () => {
  it('before startsAt: 409 not_started with startsAt, nothing changes, and the key is not spent', async () => {
    const startsAt = (await redisNow()) + 3_600_000;
    await createSale(svc.url, 'win-early', { stock: 5, shards: 2, startsAt: iso(startsAt) });
    const product = await call(svc.url, 'GET', '/api/products/win-early');
    assert.equal(product.body.startsAt, iso(startsAt));
    assert.equal(product.body.endsAt, undefined);
    const before = await snapshotRedis(infra.client);
    for (const headers of [{}, { 'idempotency-key': 'early-1' }] as Record<string, string>[]) {
      const r = await order('win-early', 'eve', headers);
      assert.deepEqual([r.status, r.body.error, r.body.startsAt], [409, 'not_started', iso(startsAt)]);
    }
    assert.deepEqual(diffSnapshots(before, await snapshotRedis(infra.client)), []);
    // Opened now (a replace with a start in the past): the same key places the order.
    await call(svc.url, 'PUT', '/admin/products/win-early', { stock: 5, shards: 2, startsAt: iso(0) }, admin);
    await until('the sale to open in this process', async () => {
      const r = await order('win-early', 'eve', { 'idempotency-key': 'early-1' });
      assert.ok(r.status === 202 || r.body.error === 'not_started', JSON.stringify(r.body));
      return r.status === 202;
    });
    assert.equal((await drained(svc.url, 'win-early')).sold, 1);
  });

  it("opens at startsAt by Redis' clock and closes at endsAt", async () => {
    const now = await redisNow();
    const startsAt = now + 300;
    const endsAt = now + 1500;
    await createSale(svc.url, 'win-edge', {
      stock: 50,
      shards: 4,
      startsAt: iso(startsAt),
      endsAt: iso(endsAt),
    });
    await until('Redis to reach startsAt', async () => (await redisNow()) >= startsAt);
    const opened = await order('win-edge', 'first');
    // Accepted unless the machine stalled past endsAt meanwhile, which Redis' clock then shows.
    if (opened.status !== 202) {
      assert.equal(opened.body.error, 'sale_ended', JSON.stringify(opened.body));
      assert.ok((await redisNow()) >= endsAt);
    }
    await until('Redis to reach endsAt', async () => (await redisNow()) >= endsAt);
    const closed = await order('win-edge', 'late');
    assert.deepEqual(
      [closed.status, closed.body.error, closed.body.endsAt],
      [409, 'sale_ended', iso(endsAt)],
    );
    const status = await drained(svc.url, 'win-edge');
    assert.equal(status.sold, opened.status === 202 ? 1 : 0);
  });

  it('refuses a window that closes before it opens, or a time without a zone, and changes nothing', async () => {
    const before = await snapshotRedis(infra.client);
    for (const body of [
      { stock: 5, shards: 1, startsAt: iso(2000), endsAt: iso(1000) },
      { stock: 5, shards: 1, startsAt: '2026-11-24T10:00:00' },
      { stock: 5, shards: 1, endsAt: 'tomorrow' },
    ]) {
      const r = await call(svc.url, 'PUT', '/admin/products/win-bad', body, admin);
      assert.deepEqual([r.status, r.body.error], [400, 'invalid_request'], JSON.stringify(body));
    }
    assert.deepEqual(diffSnapshots(before, await snapshotRedis(infra.client)), []);
  });
});
