// The order path of DESIGN.md §2 over HTTP and at the shard: no phantom sold-out, fencing of a
// lapsed holder, writer idempotence, multi-unit orders, order/product status, the sold-out fast path
// (proved with Redis command counts) and its clearing by pub/sub, per-user limits, Idempotency-Key,
// the outbox sweeper, and 429 busy on a shard held by someone else.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { LockClient, LockNotHeldError } from '@flashsale/lock';
import { lockKeys } from '@flashsale/lock/toolkit';
import { until } from '../harness/async.ts';
import { admin, call, createSale, drained, type Reply } from '../harness/service.ts';
import { insertOrders } from '../src/db/orders-repo.ts';
import { orderBody } from '../src/http/validation.ts';
import { Catalog } from '../src/inventory/catalog.ts';
import { saleKey, shardKeys, shardStockKey } from '../src/inventory/keys.ts';
import { ShardStatus } from '../src/inventory/replies.ts';
import { RESERVE } from '../src/inventory/scripts.ts';
import { BuyerLimits } from '../src/orders/buyer-limit.ts';
import { fingerprint } from '../src/orders/idempotency.ts';
import { buyerKey, idempotencyKey } from '../src/orders/keys.ts';
import type { OrderRecord } from '../src/orders/order.ts';
import { createOrderQueue, enqueueOrder } from '../src/orders/queue.ts';
import { type ApiOnly, startApiOnly } from './support/api-only.ts';
import { commandCalls, diffSnapshots, snapshotRedis } from './support/redis-snapshot.ts';
import { useInfra, useService } from './support/suite.ts';
import { reserveIn } from './support/writer-world.ts';

/** Runs `count` jobs with at most `width` in flight. */
async function pool<T>(count: number, width: number, job: (i: number) => Promise<T>): Promise<T[]> {
  const out: T[] = new Array(count);
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(width, count) }, async () => {
      while (next < count) {
        const i = next++;
        out[i] = await job(i);
      }
    }),
  );
  return out;
}

const tally = (replies: Reply[]) => {
  const m: Record<string, number> = {};
  for (const r of replies) {
    const k = r.status === 202 ? '202' : `${r.status} ${String(r.body.error)}`;
    m[k] = (m[k] ?? 0) + 1;
  }
  return m;
};

const order = (url: string, productId: string, userId: string, quantity?: number, headers = {}) =>
  call(
    url,
    'POST',
    '/api/orders',
    quantity === undefined ? { productId, userId } : { productId, userId, quantity },
    headers,
  );

const newOrderId = (productId: string, gen: number, index: number) =>
  `${productId}.${gen}.${index}.${randomBytes(12).toString('hex')}`;

describe('order path: API + writer + sweeper in one process', () => {
  const { infra, svc } = useService({ SWEEP_AGE_MS: '200', SWEEP_INTERVAL_MS: '200' });

  async function reconciled(productId: string) {
    const status = await drained(svc.url, productId);
    const rec = await call(svc.url, 'GET', `/admin/products/${productId}/reconcile`, undefined, admin);
    assert.equal(rec.body.ok, true, JSON.stringify(rec.body));
    return status;
  }

  it('no phantom sold-out: with stock on one shard only, orders succeed until it is empty', async () => {
    const gen = await createSale(svc.url, 'one-left', { stock: 40, shards: 4 });
    // Empty shards 0..2 (and take their units off the total, so conservation still holds).
    for (let i = 0; i < 3; i++) await infra.client.set(shardStockKey('one-left', gen, i), 0);
    await infra.client.hincrby(saleKey('one-left'), 'total', -30);

    const replies = await pool(30, 30, (i) => order(svc.url, 'one-left', `u${i}`));
    assert.deepEqual(tally(replies), { '202': 10, '409 sold_out': 20 });
    for (const r of replies.filter((x) => x.status === 202)) {
      assert.match(r.body.orderId as string, new RegExp(`^one-left\\.${gen}\\.3\\.`), 'served by shard 3');
    }
    const view = await call(svc.url, 'GET', '/api/products/one-left');
    assert.deepEqual(view.body, { productId: 'one-left', available: 0, soldOut: true });
    const status = await reconciled('one-left');
    assert.equal(status.sold, 10);
    assert.equal(await infra.rows('one-left'), 10);
  });

  it('no phantom sold-out for several units: a shard holding enough serves; lots too small are gathered', async () => {
    const gen = await createSale(svc.url, 'lots', { stock: 20, shards: 4 });
    for (let i = 0; i < 3; i++) await infra.client.set(shardStockKey('lots', gen, i), 1);
    await infra.client.hincrby(saleKey('lots'), 'total', -12);
    // Several rounds so that the round-robin starts on every shard at least once.
    const big = await order(svc.url, 'lots', 'big', 5);
    assert.equal(big.status, 202, JSON.stringify(big.body));
    assert.match(big.body.orderId as string, new RegExp(`^lots\\.${gen}\\.3\\.`));
    // 3 units left, one per shard: 2 at once fits no shard, but the sale holds 3 in all, so the
    // units are gathered into one shard (a live reshard) and the order is served.
    const two = await order(svc.url, 'lots', 'two', 2);
    assert.equal(two.status, 202, JSON.stringify(two.body));
    const after = await call(svc.url, 'GET', '/admin/products/lots', undefined, admin);
    assert.equal((after.body.shards as unknown[]).length, 1, 'gathered into one shard');
    // The last unit sells to the first single; then sold out.
    const singles = await pool(6, 6, (i) => order(svc.url, 'lots', `s${i}`, 1));
    assert.deepEqual(tally(singles), { '202': 1, '409 sold_out': 5 });
    const status = await reconciled('lots');
    assert.equal(status.sold, 8);
  });

  it('multi-unit orders under concurrency never drive a shard negative nor oversell', async () => {
    await createSale(svc.url, 'multi', { stock: 101, shards: 5 });
    let sampling = true;
    const negatives: string[] = [];
    const sampler = (async () => {
      while (sampling) {
        const keys = await infra.client.keys('stock:{multi:*}');
        const stocks = keys.filter((k) => /^stock:\{multi:\d+:\d+\}$/.test(k));
        if (stocks.length > 0) {
          const values = await infra.client.mget(...stocks);
          values.forEach((v, i) => {
            if (v !== null && Number(v) < 0) negatives.push(`${stocks[i]}=${v}`);
          });
        }
        await sleep(2); // the sampler's pace while the orders run (it watches, nothing waits on it)
      }
    })();
    const qty = (i: number) => (i % 4) + 1;
    const replies = await pool(300, 60, (i) => order(svc.url, 'multi', `m${i}`, qty(i)));
    sampling = false;
    await sampler;
    assert.deepEqual(negatives, []);
    const units = replies.reduce((a, r, i) => a + (r.status === 202 ? qty(i) : 0), 0);
    assert.ok(units <= 101, `oversold: ${units}`);
    for (const [i, r] of replies.entries()) {
      if (r.status === 202) assert.equal(r.body.quantity, qty(i));
      // Refused: nothing left, or fewer left than it asked (and then it says how many, fewer than asked).
      else if (r.body.error === 'insufficient_stock')
        assert.ok(Number(r.body.available) > 0, JSON.stringify(r.body));
      else assert.deepEqual([r.status, r.body.error], [409, 'sold_out']);
    }
    // Quiescent: whatever a shard still holds can be bought in one order of exactly that size.
    let bought = units;
    for (;;) {
      const st = await call(svc.url, 'GET', '/admin/products/multi', undefined, admin);
      const shard = (st.body.shards as { stock: number }[]).find((s) => s.stock > 0);
      if (!shard) break;
      const r = await order(svc.url, 'multi', 'sweeper-user', shard.stock);
      assert.equal(r.status, 202, `shard holds ${shard.stock}, order refused: ${JSON.stringify(r.body)}`);
      bought += shard.stock;
    }
    assert.equal(bought, 101);
    const status = await reconciled('multi');
    assert.equal(status.available, 0);
    assert.equal(status.sold, 101);
    assert.equal(status.confirmed, 101);
    for (const s of status.shards as { stock: number }[]) assert.equal(s.stock, 0);
  });

  it('fencing: a holder whose lease lapsed cannot decrement, even if its owner entry comes back', async () => {
    const gen = await createSale(svc.url, 'fence', { stock: 10, shards: 1 });
    const stockKey = shardStockKey('fence', gen, 0);
    const k = shardKeys(stockKey);
    const locks = new LockClient(infra.client);
    const reserveAs = (owner: string, token: number | '', orderId: string) =>
      RESERVE.run(infra.client, {
        lock: k.lock,
        tokenCounter: lockKeys(k.lock).token,
        stock: k.stock,
        fence: k.fence,
        sold: k.sold,
        reservations: k.reservations,
        owner: owner,
        token: token,
        quantity: 1,
        id: orderId,
        entry: JSON.stringify({
          orderId,
          productId: 'fence',
          userId: 'holder',
          quantity: 1,
          shardKey: stockKey,
          generation: gen,
          shardIndex: 0,
          reservedAt: Date.now() - 60_000,
        }),
        deadline: 0,
        startsAt: 0,
        endsAt: 0,
        fenced: '',
      });
    const bOrder = newOrderId('fence', gen, 0);
    const state = async () => ({
      stock: await infra.client.get(k.stock),
      sold: await infra.client.get(k.sold),
      fence: await infra.client.get(k.fence),
      // Reservations other than B's: A's refused attempts must write none. B's own may be swept
      // to Postgres at any moment (it is dated in the past); its row is checked at the end.
      res: (await infra.client.hkeys(k.reservations)).filter((id) => id !== bOrder),
    });
    try {
      // A takes the lock with a short lease and "pauses" past it.
      const a = await locks.acquire(k.lock, { leaseMs: 150, waitMs: 0 });
      await until('the lease lapsed in Redis', async () => (await infra.client.exists(k.lock)) === 0);
      await until('A knows its lease ran out', () => a.lost !== undefined);
      // B takes it and decrements.
      const b = await locks.acquire(k.lock, { leaseMs: 10_000, waitMs: 0 });
      assert.ok(b.token > a.token, `tokens ${a.token} then ${b.token}`);
      assert.deepEqual(await reserveAs(b.owner, b.token, bOrder), [ShardStatus.ok, 9, b.token]);
      const afterB = await state();
      assert.deepEqual(afterB, { stock: '9', sold: '1', fence: String(b.token), res: [] });
      // A wakes up and tries, with its token and with the in-pipeline form (token ''): refused, nothing written.
      assert.equal((await reserveAs(a.owner, a.token, newOrderId('fence', gen, 0)))[0], ShardStatus.notOwner);
      assert.equal((await reserveAs(a.owner, '', newOrderId('fence', gen, 0)))[0], ShardStatus.notOwner);
      assert.deepEqual(await state(), afterB);
      await assert.rejects(a.release(), LockNotHeldError);
      assert.equal(await infra.client.hexists(k.lock, b.owner), 1, "A's release did not free B's lock");
      await b.release();
      // Stale lock state comes back (e.g. a failover to a replica that missed B): A's owner entry is
      // present again, but its token is below the fence.
      await infra.client.hset(k.lock, a.owner, 1);
      await infra.client.pexpire(k.lock, 5000);
      assert.equal(
        (await reserveAs(a.owner, a.token, newOrderId('fence', gen, 0)))[0],
        ShardStatus.staleToken,
      );
      assert.deepEqual(await state(), afterB);
      await infra.client.del(k.lock);
      // The live path is not fenced off: its token is newer than B's.
      const live = await order(svc.url, 'fence', 'live');
      assert.equal(live.status, 202, JSON.stringify(live.body));
      const seen = await call(svc.url, 'GET', `/api/orders/${live.body.orderId}`, undefined, admin);
      assert.ok((seen.body.token as number) > b.token, JSON.stringify(seen.body));
      // B's reservation never got a job: the sweeper persists it. Both end as rows; books balance.
      const status = await reconciled('fence');
      assert.equal(status.sold, 2);
      assert.equal(await infra.rows('fence'), 2);
    } finally {
      await locks.close();
    }
  });

  it('writer idempotence: the same order delivered twice (or more) is one row', async () => {
    const queue = createOrderQueue(infra.env.REDIS_URL as string);
    try {
      // An order through the whole path, persisted; then its job delivered again under other job ids.
      await createSale(svc.url, 'dup', { stock: 5, shards: 1 });
      const placed = await order(svc.url, 'dup', 'd1');
      assert.equal(placed.status, 202);
      await drained(svc.url, 'dup');
      const view = await call(svc.url, 'GET', `/api/orders/${placed.body.orderId}`, undefined, admin);
      assert.equal(view.body.status, 'confirmed');
      const { status: _s, createdAt: _c, ...rest } = view.body;
      const record = rest as unknown as OrderRecord;
      const jobIds = ['redeliver-1', 'redeliver-2'];
      await Promise.all(jobIds.map((jobId) => queue.add('order', record, { jobId })));
      // A never-seen order delivered twice at once.
      const fresh: OrderRecord = {
        ...record,
        orderId: newOrderId('dup', record.generation, 0),
        userId: 'd2',
      };
      const freshJobs = ['fresh-a', 'fresh-b', 'fresh-c'];
      // And the ordinary idempotent enqueue (jobId = orderId) twice: one job.
      const third: OrderRecord = { ...fresh, orderId: newOrderId('dup', record.generation, 0), userId: 'd3' };
      // Reserved as reserve.lua would have: the writer persists only orders whose reservation exists.
      await reserveIn(infra.client, [fresh, third]);
      await Promise.all(freshJobs.map((jobId) => queue.add('order', fresh, { jobId })));
      await enqueueOrder(queue, third);
      await enqueueOrder(queue, third);
      for (const id of [...jobIds, ...freshJobs, third.orderId]) {
        await until(`job ${id} completed`, async () => (await queue.getJobState(id)) === 'completed');
      }
      const pg = await import('pg');
      const client = new pg.default.Client({ connectionString: infra.env.DATABASE_URL });
      await client.connect();
      try {
        const rows = await client.query<{ id: string; n: number }>(
          "select id, count(*)::int as n from orders where product_id = 'dup' group by id order by id",
        );
        assert.deepEqual(
          rows.rows.map((r) => [r.id, r.n]),
          [record.orderId, fresh.orderId, third.orderId].sort().map((id) => [id, 1]),
        );
      } finally {
        await client.end();
      }
    } finally {
      await queue.close();
    }
  });

  it('GET /api/products/:id answers {productId, available, soldOut}; 404 for an unknown product', async () => {
    await createSale(svc.url, 'view', { stock: 10, shards: 3 });
    assert.deepEqual((await call(svc.url, 'GET', '/api/products/view')).body, {
      productId: 'view',
      available: 10,
      soldOut: false,
    });
    assert.equal((await order(svc.url, 'view', 'v1', 3)).status, 202);
    const mid = await call(svc.url, 'GET', '/api/products/view');
    assert.equal(mid.status, 200);
    assert.deepEqual(mid.body, { productId: 'view', available: 7, soldOut: false });
    const rest = await pool(7, 7, (i) => order(svc.url, 'view', `w${i}`));
    assert.deepEqual(tally(rest), { '202': 7 });
    assert.deepEqual((await call(svc.url, 'GET', '/api/products/view')).body, {
      productId: 'view',
      available: 0,
      soldOut: true,
    });
    const unknown = await call(svc.url, 'GET', '/api/products/no-such-product');
    assert.equal(unknown.status, 404);
    assert.equal(unknown.body.error, 'unknown_product');
    assert.equal(typeof unknown.body.message, 'string');
  });

  it('per-user limit: 20 concurrent orders of one user with limit 2 -> exactly 2 units', async () => {
    await createSale(svc.url, 'limited', { stock: 100, shards: 4, perUserLimit: 2 });
    const replies = await pool(20, 20, () => order(svc.url, 'limited', 'alice'));
    assert.deepEqual(tally(replies), { '202': 2, '409 limit_exceeded': 18 });
    assert.equal(await infra.client.get(buyerKey('limited', 'alice')), '2');
    // Asking for more than the limit at once is refused as well, and changes nothing.
    const bob = await order(svc.url, 'limited', 'bob', 3);
    assert.deepEqual([bob.status, bob.body.error], [409, 'limit_exceeded']);
    assert.equal(Number((await infra.client.get(buyerKey('limited', 'bob'))) ?? 0), 0);
    // Other users are not affected.
    assert.equal((await order(svc.url, 'limited', 'bob', 2)).status, 202);
    const status = await reconciled('limited');
    assert.equal(status.sold, 4);
  });

  it('per-user limit: an order refused for want of stock gives its claim back', async () => {
    await createSale(svc.url, 'lim-so', { stock: 3, shards: 1, perUserLimit: 5 });
    assert.equal((await order(svc.url, 'lim-so', 'dave', 2)).status, 202);
    assert.equal(await infra.client.get(buyerKey('lim-so', 'dave')), '2');
    // 1 unit left: 2 more does not fit -> insufficient_stock (slow path, the claim was taken then returned).
    const more = await order(svc.url, 'lim-so', 'dave', 2);
    assert.deepEqual([more.status, more.body.error, more.body.available], [409, 'insufficient_stock', 1]);
    assert.equal(await infra.client.get(buyerKey('lim-so', 'dave')), '2');
    // The last unit, then a refusal with the product known empty.
    assert.equal((await order(svc.url, 'lim-so', 'erin', 1)).status, 202);
    const late = await order(svc.url, 'lim-so', 'dave', 1);
    assert.deepEqual([late.status, late.body.error], [409, 'sold_out']);
    assert.equal(await infra.client.get(buyerKey('lim-so', 'dave')), '2');
    const fresh = await order(svc.url, 'lim-so', 'frank', 3);
    assert.deepEqual([fresh.status, fresh.body.error], [409, 'sold_out']);
    assert.equal(Number((await infra.client.get(buyerKey('lim-so', 'frank'))) ?? 0), 0);
    // Dave can still use the rest of his limit after a restock.
    await call(svc.url, 'POST', '/admin/products/lim-so/restock', { delta: 3 }, admin);
    assert.equal((await order(svc.url, 'lim-so', 'dave', 3)).status, 202);
    assert.equal(await infra.client.get(buyerKey('lim-so', 'dave')), '5');
  });

  it('Idempotency-Key: 50 concurrent identical requests make one order; another body is 422', async () => {
    await createSale(svc.url, 'idem', { stock: 100, shards: 4 });
    const headers = { 'idempotency-key': 'checkout-7f3a' };
    const replies = await pool(50, 50, () => order(svc.url, 'idem', 'ike', 2, headers));
    assert.deepEqual(tally(replies), { '202': 50 });
    const first = replies[0]?.body;
    assert.ok(first && typeof first.orderId === 'string');
    for (const r of replies) assert.deepEqual(r.body, first);
    assert.deepEqual(first, {
      orderId: first.orderId,
      status: 'reserved',
      productId: 'idem',
      userId: 'ike',
      quantity: 2,
    });
    // Replayed later: the same answer again.
    assert.deepEqual((await order(svc.url, 'idem', 'ike', 2, headers)).body, first);
    // Same key, another body: refused, nothing placed.
    const reused = await call(
      svc.url,
      'POST',
      '/api/orders',
      { productId: 'idem', userId: 'ike', quantity: 3 },
      headers,
    );
    assert.equal(reused.status, 422, JSON.stringify(reused.body));
    assert.equal(reused.body.error, 'idempotency_key_reused');
    assert.equal(typeof reused.body.message, 'string');
    // Keys are scoped per buyer: another buyer's same key is another key, never ike's answer.
    const other = await order(svc.url, 'idem', 'someone-else', 2, headers);
    assert.equal(other.status, 202, JSON.stringify(other.body));
    assert.notEqual(other.body.orderId, first.orderId);
    const status = await reconciled('idem');
    assert.equal(status.sold, 4);
    assert.equal(await infra.rows('idem'), 2);
    const ttl = await infra.client.ttl(idempotencyKey('ike', 'checkout-7f3a'));
    assert.ok(ttl > 23 * 3600 && ttl <= 24 * 3600, `remembered for 24 h, ttl ${ttl}`);
  });

  it('sweeper: a reservation with no job becomes a row; one whose row exists is dropped', async () => {
    const gen = await createSale(svc.url, 'swept', { stock: 5, shards: 1 });
    const k = shardKeys(shardStockKey('swept', gen, 0));
    const record = (userId: string): OrderRecord => ({
      orderId: newOrderId('swept', gen, 0),
      productId: 'swept',
      userId,
      quantity: 1,
      shardKey: k.stock,
      generation: gen,
      shardIndex: 0,
      token: 1,
      reservedAt: Date.now() - 60_000,
    });
    // As the reserve script would have done: units taken, sold counted, the reservation written...
    const lost = record('api-died-before-enqueue');
    const done = record('writer-died-after-commit');
    await infra.client.decrby(k.stock, 2);
    await infra.client.incrby(k.sold, 2);
    // ...then the API died before enqueueing `lost`, and the writer died after committing `done`.
    await insertOrders(svc.rt.db, [done]);
    await infra.client.hset(
      k.reservations,
      lost.orderId,
      JSON.stringify(lost),
      done.orderId,
      JSON.stringify(done),
    );
    await until('reservations swept', async () => (await infra.client.hlen(k.reservations)) === 0);
    assert.equal(await infra.rows('swept'), 2);
    const view = await call(svc.url, 'GET', `/api/orders/${lost.orderId}`);
    assert.deepEqual(
      [view.status, view.body.status, view.body.userId, view.body.quantity],
      [200, 'confirmed', 'api-died-before-enqueue', 1],
    );
    const status = await reconciled('swept');
    assert.deepEqual([status.available, status.sold, status.confirmed], [3, 2, 2]);
  });
});

describe('order path: API processes without a writer', () => {
  const { infra, setup, stopFirst } = useInfra();
  /** Default settings. */
  let a: ApiOnly;
  /** A second process, LOCK_WAIT_MS=0: a busy shard answers 429 at once. */
  let b: ApiOnly;
  setup(async () => {
    // Its sold-out verdicts are not re-checked while a test counts the commands of the fast path.
    a = stopFirst(await startApiOnly(infra, { SOLD_OUT_RECHECK_MS: '0' }));
    b = stopFirst(await startApiOnly(infra, { LOCK_WAIT_MS: '0' }));
  });

  /** Holds a shard lock as a foreign owner (e.g. Java Redisson), Redisson layout. */
  async function holdForeign(lockKey: string, ms = 30_000) {
    await infra.client.hset(lockKey, 'e4f1c2d0-java-client:57', 1);
    await infra.client.pexpire(lockKey, ms);
  }

  it('sold-out fast path: 100 orders after sell-out cost no Redis script call; a restock elsewhere clears it', async () => {
    await createSale(a.url, 'fast', { stock: 3, shards: 2 });
    const first = await pool(4, 1, (i) => order(a.url, 'fast', `f${i}`));
    assert.deepEqual(tally(first), { '202': 3, '409 sold_out': 1 });
    const fastBefore = (await a.rt.metrics.soldOutFastPath.get()).values[0]?.value ?? 0;

    const before = await commandCalls(infra.client);
    const replies = await pool(100, 10, (i) => order(a.url, 'fast', `g${i}`));
    const after = await commandCalls(infra.client);
    assert.deepEqual(tally(replies), { '409 sold_out': 100 });
    const delta = (cmd: string) => (after[cmd] ?? 0) - (before[cmd] ?? 0);
    assert.equal(delta('evalsha'), 0, 'no EVALSHA');
    assert.equal(delta('eval'), 0, 'no EVAL');
    // INFO is the count itself; TIME is each process's clock sample (every second, RedisClock), on its
    // own timer: neither is a command of the orders.
    const others = Object.keys(after).filter((c) => c !== 'info' && c !== 'time' && delta(c) !== 0);
    assert.deepEqual(
      others.map((c) => `${c}+${delta(c)}`),
      [],
      'no Redis command at all',
    );
    const fastAfter = (await a.rt.metrics.soldOutFastPath.get()).values[0]?.value ?? 0;
    assert.equal(fastAfter - fastBefore, 100);

    // Restocked through the other process: the event reaches this one over pub/sub.
    const restock = await call(b.url, 'POST', '/admin/products/fast/restock', { delta: 2 }, admin);
    assert.equal(restock.status, 200, JSON.stringify(restock.body));
    assert.equal(restock.body.available, 2);
    const again = await pool(3, 1, (i) => order(a.url, 'fast', `h${i}`));
    assert.deepEqual(tally(again), { '202': 2, '409 sold_out': 1 });
  });

  it('a sold-out verdict that missed its "units back" event lapses: one order re-reads and sells', async () => {
    const gen = await createSale(b.url, 'lost', { stock: 1, shards: 1 });
    assert.equal((await order(b.url, 'lost', 'l1')).status, 202);
    assert.equal((await order(b.url, 'lost', 'l2')).body.error, 'sold_out');
    // A unit comes back with no event (as when a sharded subscription moved with its slot).
    await infra.client.incrby(shardStockKey('lost', gen, 0), 1);
    await infra.client.hincrby(saleKey('lost'), 'total', 1);
    const sold = await until('the verdict to lapse (SOLD_OUT_RECHECK_MS, default 1 s)', async () => {
      const r = await order(b.url, 'lost', 'l3');
      assert.ok(r.status === 202 || r.body.error === 'sold_out', JSON.stringify(r.body));
      return r.status === 202;
    });
    assert.ok(sold);
    assert.equal((await order(b.url, 'lost', 'l4')).body.error, 'sold_out', 'the last unit is gone again');
  });

  it("a sold-out verdict reached before a restock's event does not stick after it", async () => {
    // The interleaving inside StockReserver.reserveIn: request R1 reads every shard empty, a restock
    // lands and its event makes R2 reload the sale, then R1 marks the product sold out with its old view.
    await createSale(a.url, 'race', { stock: 0, shards: 2 });
    const sub = infra.client.duplicate();
    const catalog = new Catalog(infra.client, sub);
    try {
      const seenByR1 = await catalog.get('race');
      assert.ok(seenByR1);
      const restock = await call(a.url, 'POST', '/admin/products/race/restock', { delta: 2 }, admin);
      assert.equal(restock.status, 200);
      catalog.invalidate('race'); // the restock's event
      const reloaded = await catalog.get('race'); // R2
      assert.ok(reloaded);
      catalog.markSoldOut(seenByR1); // R1, with its view from before the restock
      assert.equal(catalog.isSoldOut('race'), false, 'phantom sold-out: 2 units on sale');
      // A verdict on the current view does stick (the fast path works).
      catalog.markSoldOut(reloaded);
      assert.equal(catalog.isSoldOut('race'), true);
    } finally {
      sub.disconnect();
    }
  });

  it('busy: a shard lock held by a foreign owner answers 429 busy with Retry-After and changes nothing', async () => {
    const gen = await createSale(a.url, 'busy', { stock: 5, shards: 1 });
    const lock = shardKeys(shardStockKey('busy', gen, 0)).lock;
    await holdForeign(lock);
    const before = await snapshotRedis(infra.client);
    const rowsBefore = await infra.rows();
    for (const headers of [{}, { 'idempotency-key': 'busy-retry-1' }]) {
      const r = await order(b.url, 'busy', 'bo', 1, headers);
      assert.equal(r.status, 429, JSON.stringify(r.body));
      assert.equal(r.body.error, 'busy');
      assert.equal(typeof r.body.message, 'string');
      const retryAfter = r.headers.get('retry-after');
      assert.ok(retryAfter !== null && /^[1-9]\d*$/.test(retryAfter), `Retry-After: ${retryAfter}`);
    }
    assert.deepEqual(diffSnapshots(before, await snapshotRedis(infra.client)), []);
    assert.equal(await infra.rows(), rowsBefore);
    // The holder lets go: the same key now places the order (a 429 was not remembered).
    await infra.client.del(lock);
    const ok = await order(b.url, 'busy', 'bo', 1, { 'idempotency-key': 'busy-retry-1' });
    assert.equal(ok.status, 202, JSON.stringify(ok.body));
  });

  it('busy: with one shard held, orders go to the other shard instead of answering 429', async () => {
    const gen = await createSale(a.url, 'busy2', { stock: 10, shards: 2 });
    const lock0 = shardKeys(shardStockKey('busy2', gen, 0)).lock;
    await holdForeign(lock0);
    try {
      const replies = await pool(5, 1, (i) => order(b.url, 'busy2', `x${i}`));
      assert.deepEqual(tally(replies), { '202': 5 }, 'shard 1 holds 5 units');
      // Shard 1 is empty now; shard 0 still holds 5 but is held: busy, not sold out.
      const sixth = await order(b.url, 'busy2', 'x5');
      assert.deepEqual([sixth.status, sixth.body.error], [429, 'busy']);
    } finally {
      await infra.client.del(lock0);
    }
  });

  it('Idempotency-Key: a claim left by a request that died is settled by the retry — its order if it placed one, else a new one', async () => {
    await createSale(a.url, 'idem-dead', { stock: 5, shards: 2, perUserLimit: 1 });
    const deadClaim = async (
      key: string,
      body: { productId: string; userId: string },
      ticket: string,
      deadline: number,
    ) => {
      const record = { fingerprint: fingerprint(orderBody(100).parse(body)), attempt: ticket, deadline };
      await infra.client.set(idempotencyKey(body.userId, key), JSON.stringify(record), 'EX', 86_400);
    };
    const [seconds] = await infra.client.time();
    const serverNow = Number(seconds) * 1000;

    // A: the first request reserved its order, then its API died before it stored the answer.
    const first = await order(a.url, 'idem-dead', 'ann', 1, { 'idempotency-key': 'died-after' });
    assert.equal(first.status, 202);
    const ticketA = String(first.body.orderId).split('.')[3] as string;
    await deadClaim('died-after', { productId: 'idem-dead', userId: 'ann' }, ticketA, serverNow - 1000);
    const retryA = await order(b.url, 'idem-dead', 'ann', 1, { 'idempotency-key': 'died-after' });
    assert.equal(retryA.status, 202, JSON.stringify(retryA.body));
    assert.equal(retryA.body.orderId, first.body.orderId, 'the order the dead request placed');
    const again = await order(a.url, 'idem-dead', 'ann', 1, { 'idempotency-key': 'died-after' });
    assert.equal(again.body.orderId, first.body.orderId, 'and it is now the remembered answer');

    // B: the first request claimed the buyer's limit, then died before reserving; its claim's deadline
    // is still ahead, so the retry waits it out, finds nothing, gives the limit claim back and orders.
    const ticketB = randomBytes(12).toString('hex');
    await new BuyerLimits(infra.client).claim('idem-dead', 'bob', 1, 1, ticketB);
    await deadClaim('died-before', { productId: 'idem-dead', userId: 'bob' }, ticketB, serverNow + 1500);
    const retryB = await order(b.url, 'idem-dead', 'bob', 1, { 'idempotency-key': 'died-before' });
    assert.equal(retryB.status, 202, JSON.stringify(retryB.body));
    assert.notEqual(String(retryB.body.orderId).split('.')[3], ticketB, 'placed by the retry itself');
    assert.equal(
      await infra.client.get(buyerKey('idem-dead', 'bob')),
      '1',
      "the dead attempt's claim came back",
    );

    const status = await call(a.url, 'GET', '/admin/products/idem-dead', undefined, admin);
    assert.equal(status.body.sold, 2, 'two orders: one per key');
  });

  it('GET /api/orders/:id: reserved while no writer runs, confirmed once one does; 404 unknown_order', async () => {
    await createSale(a.url, 'rc', { stock: 5, shards: 2 });
    const placed = await order(a.url, 'rc', 'rita', 2);
    assert.equal(placed.status, 202);
    const id = placed.body.orderId as string;
    const expected = { orderId: id, productId: 'rc', userId: 'rita', quantity: 2 };
    for (const url of [a.url, b.url]) {
      const r = await call(url, 'GET', `/api/orders/${id}`);
      assert.equal(r.status, 200);
      assert.equal(r.body.status, 'reserved');
      assert.deepEqual(
        {
          orderId: r.body.orderId,
          productId: r.body.productId,
          userId: r.body.userId,
          quantity: r.body.quantity,
        },
        expected,
      );
    }
    // No process runs a writer yet: nothing can write a row, so there is nothing to wait for.
    assert.equal(await infra.rows('rc'), 0, 'no writer, no row');
    assert.equal((await call(a.url, 'GET', `/api/orders/${id}`)).body.status, 'reserved');

    await a.startWriter();
    const confirmed = await until('confirmed', async () => {
      const r = await call(b.url, 'GET', `/api/orders/${id}`);
      return r.body.status === 'confirmed' ? r : undefined;
    });
    assert.equal(confirmed.status, 200);
    assert.deepEqual(
      {
        orderId: confirmed.body.orderId,
        productId: confirmed.body.productId,
        userId: confirmed.body.userId,
        quantity: confirmed.body.quantity,
      },
      expected,
    );
    assert.equal(await infra.rows('rc'), 1);
    const shard = Number(id.split('.')[2]);
    const gen = Number(id.split('.')[1]);
    assert.equal(await infra.client.hexists(shardKeys(shardStockKey('rc', gen, shard)).reservations, id), 0);

    for (const unknown of [`rc.${gen}.0.${'0'.repeat(24)}`, 'nope.1.0.abc', 'x']) {
      const r = await call(a.url, 'GET', `/api/orders/${encodeURIComponent(unknown)}`);
      assert.equal(r.status, 404, unknown);
      assert.equal(r.body.error, 'unknown_order');
      assert.equal(typeof r.body.message, 'string');
    }
  });
});
