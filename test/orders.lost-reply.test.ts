// Invariants 3 and 4 when the API's connections to Redis break with reservations in flight: Redis
// ran some of them, but their replies never came back. A request must then learn what happened
// (wait out its attempt's deadline, look for its ticket) instead of guessing; a client that retries
// with its Idempotency-Key must end with exactly one order, and no order may exist that no client
// was told about. Per-user limit 1 makes a doubled order visible as a user over the limit.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { admin, call, createSale, drained, type Reply } from '../harness/service.ts';
import { buyerKey } from '../src/orders/keys.ts';
import { FaultProxy } from './faults/proxy.ts';
import { type ApiOnly, startApiOnly } from './support/api-only.ts';
import { useInfra } from './support/suite.ts';

const ROUNDS = 5;
const PER_ROUND = 40;

describe('order path: replies lost to broken Redis connections', () => {
  const { infra, setup, stopFirst } = useInfra();
  let proxy: FaultProxy;
  let api: ApiOnly;
  setup(async () => {
    proxy = await FaultProxy.start(infra.redis.port);
    stopFirst({ stop: () => proxy.close() });
    api = stopFirst(await startApiOnly(infra, { REDIS_URL: `redis://127.0.0.1:${proxy.port}` }));
    await api.startWriter();
  });

  it('every retried key ends as one order; every order was answered; no user over the limit', async () => {
    const product = 'lost';
    await createSale(api.url, product, { stock: 1000, shards: 4, perUserLimit: 1 });
    const send = (user: string) =>
      call(
        api.url,
        'POST',
        '/api/orders',
        { productId: product, userId: user },
        { 'idempotency-key': `k-${user}` },
      );
    const last = new Map<string, Reply>();
    for (let round = 0; round < ROUNDS; round++) {
      const users = Array.from({ length: PER_ROUND }, (_, i) => `u${round}-${i}`);
      const replies = users.map(async (u) => last.set(u, await send(u)));
      await sleep(2 + round * 2); // the cut lands at a later point of the orders' flight each round: the thing under test
      await proxy.cut(30);
      await Promise.all(replies);
    }
    assert.ok(proxy.cutConnections > 0, 'the cuts broke connections');
    // Clients retry what did not get a decision, with the same key.
    for (let pass = 0; pass < 3; pass++) {
      for (const [u, r] of last) if (r.status !== 202 && r.status !== 409) last.set(u, await send(u));
    }
    const outcomes = [...last.values()].map((r) =>
      r.status === 202 ? '202' : `${r.status} ${r.body.error}`,
    );
    const answered = [...last.values()].filter((r) => r.status === 202);
    assert.equal(
      answered.length,
      ROUNDS * PER_ROUND,
      `every key ends in an order: ${JSON.stringify(outcomes)}`,
    );

    const status = await drained(api.url, product);
    const ids = new Set(answered.map((r) => String(r.body.orderId)));
    const rows = await infra.pool.query<{ id: string; user_id: string }>(
      'select id, user_id from orders where product_id = $1',
      [product],
    );
    assert.equal(rows.rowCount, ids.size, 'one row per answered order, and no order nobody was told about');
    for (const row of rows.rows) assert.ok(ids.has(row.id), `row ${row.id} was never answered`);
    assert.equal(status.sold, ids.size, 'sold == orders');
    assert.equal(new Set(rows.rows.map((r) => r.user_id)).size, rows.rowCount, 'no user has two orders');
    const counts = await infra.client.mget(...[...last.keys()].map((u) => buyerKey(product, u)));
    assert.deepEqual(
      counts.filter((c) => c !== '1'),
      [],
      "each buyer's count is exactly their one unit (no claim leaked, none given back twice)",
    );
    const rec = await call(api.url, 'GET', `/admin/products/${product}/reconcile`, undefined, admin);
    assert.equal(rec.body.ok, true, JSON.stringify(rec.body));
  });
});
