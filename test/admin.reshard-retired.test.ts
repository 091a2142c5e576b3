// Orders and retired shards: an order that picked a shard a reshard retires moves to the new generation
// (202, not refused), and reservations on retired shards are still persisted by the writer and sweeper.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { LockClient } from '@flashsale/lock';
import { counter, generationOf, order, reconcile, reshard, restock, saleStatus } from '../harness/reshard.ts';
import {
  call,
  createSale,
  drained,
  NO_LOAD_SHEDDING,
  type Spawned,
  spawnService,
  startInfra,
} from '../harness/service.ts';
import { createOrderQueue } from '../src/orders/queue.ts';
import { queuedOn } from './support/lock-queue.ts';
import { useService } from './support/suite.ts';

const { infra, svc } = useService();

describe('orders and retired shards', () => {
  it('an order waiting on a shard that a reshard retires moves to the new generation (202, not refused)', async () => {
    const P = 'moved-over';
    await createSale(svc.url, P, { stock: 10, shards: 1 });
    const g = Number((await saleStatus(svc.url, P)).generation);
    const retiredBefore = await counter(svc.url, 'flashsale_shard_attempts_total', 'outcome="retired"');
    // Hold the only shard's lock, so the admin queues for it first and the order queues behind it.
    const name = `stock:{${P}:${g}:0}:lock`;
    const locks = new LockClient(infra.redis.client());
    const held = await locks.acquire(name, { leaseMs: 10_000 });
    const queued = (n: number) => queuedOn(infra.client, name, n);
    try {
      const resharding = reshard(svc.url, P, 3);
      await queued(1);
      const ordering = order(svc.url, P, 'patient');
      await queued(2);
      await held.release();
      const [r, o] = await Promise.all([resharding, ordering]);
      assert.equal(r.status, 200, JSON.stringify(r.body));
      assert.equal(o.status, 202, JSON.stringify(o.body));
      assert.equal(generationOf(o.body.orderId), g + 1, 'reserved in the new generation');
    } finally {
      await locks.close();
    }
    const retiredAfter = await counter(svc.url, 'flashsale_shard_attempts_total', 'outcome="retired"');
    assert.ok(retiredAfter > retiredBefore, 'the order was told its shard was retired');
    const s = await drained(svc.url, P);
    assert.equal(s.available, 9);
    assert.equal(s.confirmed, 1);
  });

  it('reservations on retired shards stay valid: the writer and the sweeper persist them', async () => {
    // Own Redis and Postgres: no writer may run until the test starts one.
    const own = await startInfra(NO_LOAD_SHEDDING);
    const api = await spawnService(own, 'api');
    let worker: Spawned | undefined;
    const P = 'retired-res';
    try {
      await createSale(api.url, P, { stock: 100, shards: 4 });
      const accepted: string[] = [];
      const placeSome = async (n: number, tag: string) => {
        for (let i = 0; i < n; i++) {
          const r = await order(api.url, P, `${tag}${i}`);
          assert.equal(r.status, 202, JSON.stringify(r.body));
          accepted.push(r.body.orderId as string);
        }
      };
      // No writer runs: the orders stay reservations on shards that then get retired.
      await placeSome(10, 'a');
      assert.equal((await reshard(api.url, P, 2)).status, 200);
      await placeSome(10, 'b');
      assert.equal((await restock(api.url, P, 5)).status, 200);
      await placeSome(10, 'c');
      assert.equal((await reshard(api.url, P, 3)).status, 200);
      const mid = await saleStatus(api.url, P);
      assert.equal(mid.reserved, 30);
      assert.equal(mid.sold, 30);
      assert.equal(Number(mid.available) + Number(mid.sold), 105);
      // A reservation on a retired shard still answers its status.
      const first = await call(api.url, 'GET', `/api/orders/${accepted[0]}`);
      assert.equal(first.body.status, 'reserved');
      // Lose the queued jobs for the first 20 (as if the API died before enqueueing them): only the
      // sweeper, reading the reservation hashes of retired shards, can bring those orders home.
      const queue = createOrderQueue(own.env.REDIS_URL as string);
      for (const id of accepted.slice(0, 20)) await queue.remove(id);
      await queue.close();
      worker = await spawnService(own, 'worker', { SWEEP_AGE_MS: '100', SWEEP_INTERVAL_MS: '100' });
      const s = await drained(api.url, P, 60_000);
      assert.equal(s.confirmed, 30);
      assert.equal(Number(s.available) + Number(s.sold), s.total);
      const rows = await own.pool.query('select id from orders where product_id = $1', [P]);
      assert.deepEqual(rows.rows.map((row: { id: string }) => row.id).sort(), [...accepted].sort());
      assert.equal((await reconcile(api.url, P)).body.ok, true);
      assert.equal((await call(api.url, 'GET', `/api/orders/${accepted[0]}`)).body.status, 'confirmed');
      assert.equal(
        await own.client.hlen(`stock:{${P}:1:0}:res`),
        0,
        'retired reservations are cleared once persisted',
      );
      assert.match(worker.output(), /sweeper re-enqueued/);
    } finally {
      await worker?.stop();
      await api.stop();
      await own.stop();
    }
  });
});
