// REDIS_WAIT_REPLICAS=1 with a replica that stops acknowledging (SIGSTOP): every order is refused 503
// unavailable and none becomes a row; a withdrawn reservation a failover brings back is voided, not sold.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { until } from '../../harness/async.ts';
import { RedisServer } from '../../harness/redis-server.ts';
import { reshard, saleStatus } from '../../harness/reshard.ts';
import {
  call,
  createSale,
  type Infra,
  NO_LOAD_SHEDDING,
  placeOrder,
  type Service,
  startInfra,
  startService,
} from '../../harness/service.ts';
import { parseOrderId } from '../../src/orders/attempt.ts';

const STOCK = 40;

interface Withdrawn {
  id: string;
  user_id: string;
  quantity: number;
  shard_key: string;
}

describe('an order its replica does not confirm is withdrawn: never an order, its units back', () => {
  let infra: Infra;
  let replica: RedisServer;
  let svc: Service;
  before(async () => {
    infra = await startInfra(NO_LOAD_SHEDDING);
    replica = await RedisServer.start();
    await replica.client().replicaof('127.0.0.1', infra.redis.port);
    await until('the replica in sync', async () =>
      (await replica.client().info('replication')).includes('master_link_status:up'),
    );
    svc = await startService(infra, {
      REDIS_WAIT_REPLICAS: '1',
      REDIS_WAIT_TIMEOUT_MS: '200',
      SWEEP_AGE_MS: '300',
      SWEEP_INTERVAL_MS: '200',
      EXPIRY_INTERVAL_MS: '200',
    });
  });
  after(async () => {
    await svc?.stop();
    await replica?.stop();
    await infra?.stop();
  });

  const withdrawn = async (productId: string) =>
    (
      await infra.pool.query<Withdrawn>(
        'select id, user_id, quantity, shard_key from withdrawn_orders where product_id = $1',
        [productId],
      )
    ).rows;

  it('a paused replica: every order 503 unavailable, no row, stock and claims back; sells again once it resumes', async () => {
    await createSale(svc.url, 'w1', { stock: STOCK, shards: 2, perUserLimit: 1 });
    replica.pause();
    const answers: { status: number; error: unknown; user: string }[] = [];
    try {
      for (let i = 0; i < 12; i++) {
        const user = `u${i % 3}`;
        const r = await placeOrder(
          svc.url,
          { productId: 'w1', userId: user },
          { 'idempotency-key': `k${i}` },
        );
        answers.push({ status: r.status, error: r.body.error, user });
      }
      for (const a of answers) assert.deepEqual([a.status, a.error], [503, 'unavailable'], JSON.stringify(a));
      const tombstones = await withdrawn('w1');
      assert.ok(tombstones.length >= 1, 'the first order was reserved, then withdrawn');
      // Nothing sold: every unit back in Redis, no row, and the keys free (a retry runs again).
      const status = await until('the withdrawn units back', async () => {
        const s = await saleStatus(svc.url, 'w1');
        return s.available === STOCK && s.sold === 0 && s.reserved === 0 ? s : undefined;
      });
      assert.equal(status.total, STOCK);
      assert.equal(await infra.rows('w1'), 0);
      const retry = await placeOrder(svc.url, { productId: 'w1', userId: 'u0' }, { 'idempotency-key': 'k0' });
      assert.deepEqual([retry.status, retry.body.error], [503, 'unavailable']);
      for (const t of tombstones) {
        const got = await call(svc.url, 'GET', `/api/orders/${t.id}`);
        assert.equal(got.status, 404, `withdrawn ${t.id} is no order`);
      }
    } finally {
      replica.resume();
    }
    // Back in sync: the same buyers (limit 1 each: their claims were given back) and keys buy.
    const sold = await until('an order accepted with the replica back', async () => {
      const r = await placeOrder(
        svc.url,
        { productId: 'w1', userId: 'u0' },
        { 'idempotency-key': 'after-0' },
      );
      return r.status === 202 ? r : undefined;
    });
    const again = await placeOrder(
      svc.url,
      { productId: 'w1', userId: 'u0' },
      { 'idempotency-key': 'after-0' },
    );
    assert.equal(again.body.orderId, sold.body.orderId, 'the key answers the same order');
    await until('its row', async () => (await infra.rows('w1')) === 1);
  });

  it('a withdrawn reservation that comes back (a failover to a replica that had it): voided once, never a row', async () => {
    await createSale(svc.url, 'w2', { stock: STOCK, shards: 1 });
    replica.pause();
    let tombstone: Withdrawn | undefined;
    try {
      tombstone = await until('an order withdrawn', async () => {
        await placeOrder(svc.url, { productId: 'w2', userId: 'v' });
        return (await withdrawn('w2'))[0];
      });
    } finally {
      replica.resume();
    }
    await until('its units back', async () => (await saleStatus(svc.url, 'w2')).available === STOCK);
    // What a promoted replica holds when the decrement replicated but the withdrawal did not.
    const place = parseOrderId(tombstone.id);
    assert.ok(place);
    const entry = {
      orderId: tombstone.id,
      productId: 'w2',
      userId: tombstone.user_id,
      quantity: tombstone.quantity,
      shardKey: tombstone.shard_key,
      generation: place.generation,
      shardIndex: place.index,
      reservedAt: Date.now() - 60_000,
      perUserLimit: 0,
      token: 1,
    };
    await infra.client
      .multi()
      .decrby(tombstone.shard_key, tombstone.quantity)
      .incrby(`${tombstone.shard_key}:sold`, tombstone.quantity)
      .hset(`${tombstone.shard_key}:res`, tombstone.id, JSON.stringify(entry))
      .exec();
    assert.equal((await call(svc.url, 'GET', `/api/orders/${tombstone.id}`)).status, 404);
    // The sweeper sends it to the writer, which gives its units back instead of inserting it.
    const status = await until('the resurrected reservation voided', async () => {
      const s = await saleStatus(svc.url, 'w2');
      return s.reserved === 0 && s.available === STOCK ? s : undefined;
    });
    assert.equal(Number(status.available) + Number(status.sold), status.total);
    assert.equal(await infra.rows('w2'), 0);
    assert.equal(await infra.client.hexists(`${tombstone.shard_key}:res`, tombstone.id), 0);
  });

  it('a withdrawn reservation on a shard retired meanwhile: its units come back through the sale, once', async () => {
    await createSale(svc.url, 'w3', { stock: STOCK, shards: 2 });
    const [shardKey] = ((await saleStatus(svc.url, 'w3')).shards as { key: string }[]).map((x) => x.key);
    assert.ok(shardKey);
    const id = `w3.${(await saleStatus(svc.url, 'w3')).generation}.0.${'ab'.repeat(12)}`;
    const place = parseOrderId(id);
    assert.ok(place);
    // A reservation left behind and withdrawn (its tombstone), not yet old enough for the sweeper.
    const entry = (reservedAt: number) =>
      JSON.stringify({
        orderId: id,
        productId: 'w3',
        userId: 'r',
        quantity: 2,
        shardKey,
        generation: place.generation,
        shardIndex: 0,
        reservedAt,
        perUserLimit: 0,
        token: 1,
      });
    await infra.client
      .multi()
      .decrby(shardKey, 2)
      .incrby(`${shardKey}:sold`, 2)
      .hset(`${shardKey}:res`, id, entry(Date.now() + 3_600_000))
      .exec();
    await infra.pool.query(
      `insert into withdrawn_orders (id, product_id, user_id, quantity, shard_key) values ($1, 'w3', 'r', 2, $2)`,
      [id, shardKey],
    );
    assert.equal((await reshard(svc.url, 'w3', 3)).status, 200);
    // Now old: the sweeper sends it on, the writer finds the tombstone and the shard retired.
    await infra.client.hset(`${shardKey}:res`, id, entry(Date.now() - 60_000));
    let last: unknown;
    const status = await until(
      'its units back on sale',
      async () => {
        const s = await saleStatus(svc.url, 'w3');
        last = s;
        return s.reserved === 0 && s.available === STOCK && s.returning === 0 ? s : undefined;
      },
      { describe: () => JSON.stringify(last) },
    );
    assert.equal(Number(status.available) + Number(status.sold), status.total);
    assert.equal(await infra.rows('w3'), 0);
    assert.equal(await infra.client.hget('sale:{w3}:withdrawn', id), '2', 'given back once, remembered');
  });
});
