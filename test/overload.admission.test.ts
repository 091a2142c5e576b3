// Admission control on the real order path (private Redis and Postgres), with WAITING_ROOM=off: an
// order refused because the process is at its limit is answered 429 busy with Retry-After and changes
// nothing (no
// Idempotency-Key record, no per-user claim, no reservation, no row); its retry with the same key is
// placed exactly once; and the adaptive limit, cut by slow orders, climbs back to its initial value
// on fast ones. Shedding is forced by configuration (a limit of 1 and no queue), and slow orders by
// holding a shard's lock, so nothing depends on how fast this machine is. Refusals on arrival come
// from the shed lane, before the request is parsed.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { LockClient } from '@flashsale/lock';
import { until } from '../harness/async.ts';
import { admin, call, createSale, drained, type Reply } from '../harness/service.ts';
import { queuedOn } from './support/lock-queue.ts';
import { diffSnapshots, snapshotRedis } from './support/redis-snapshot.ts';
import { useService } from './support/suite.ts';

/** The value of an unlabelled gauge on GET /metrics. */
async function gauge(url: string, name: string): Promise<number> {
  const text = await (await fetch(`${url}/metrics`)).text();
  const m = new RegExp(`^${name} (\\S+)$`, 'm').exec(text);
  assert.ok(m, `${name} not on /metrics`);
  return Number(m[1]);
}

const order = (url: string, productId: string, userId: string, headers: Record<string, string> = {}) =>
  call(url, 'POST', '/api/orders', { productId, userId }, headers);

/** The lock of shard `index` of the current generation of `productId`. */
async function shardLock(url: string, productId: string, index = 0): Promise<string> {
  const r = await call(url, 'GET', `/admin/products/${productId}`, undefined, admin);
  return `stock:{${productId}:${r.body.generation}:${index}}:lock`;
}

function assertBusy(r: Reply, what: string): void {
  assert.equal(r.status, 429, `${what}: ${r.status} ${JSON.stringify(r.body)}`);
  assert.equal(r.body.error, 'busy', what);
  const retryAfter = Number(r.headers.get('retry-after'));
  assert.ok(
    Number.isInteger(retryAfter) && retryAfter >= 1 && retryAfter <= 3,
    `${what}: Retry-After ${retryAfter}`,
  );
}

/** One order in flight at a time and no waiting for a slot; orders on a held shard wait long. */
const ONE_AT_A_TIME = {
  ADMISSION_LIMIT: '1',
  ADMISSION_MIN_LIMIT: '1',
  ADMISSION_MAX_LIMIT: '1',
  ADMISSION_QUEUE_MS: '0',
  ADMISSION_MAX_LAG_MS: '0',
  LOCK_WAIT_MS: '30000',
};

describe('a shed order', () => {
  // One order in flight at a time and no waiting: while one is stuck on a held shard lock, the
  // next is refused on arrival.
  const { infra, svc } = useService({ ...ONE_AT_A_TIME, WAITING_ROOM: 'off' });

  it('changes nothing, and its retry with the same Idempotency-Key is placed exactly once', async () => {
    await createSale(svc.url, 'held', { stock: 5, shards: 1 });
    await createSale(svc.url, 'wanted', { stock: 5, shards: 2, perUserLimit: 1 });
    const name = await shardLock(svc.url, 'held');
    const locks = new LockClient(infra.redis.client());
    const hold = await locks.acquire(name, { leaseMs: 60_000 });
    let stuck: Promise<Reply> | undefined;
    try {
      stuck = order(svc.url, 'held', 'first');
      await queuedOn(infra.client, name, 1);
      assert.equal(await gauge(svc.url, 'flashsale_admission_inflight'), 1);
      // Everything but the stuck order's own product (its lock queue, its claims) must stay as is.
      const exclude = (key: string) => key.includes('held');
      const before = await snapshotRedis(infra.client, { exclude });
      const rowsBefore = await infra.rows();
      const key = { 'idempotency-key': 'bob-once' };
      assertBusy(await order(svc.url, 'wanted', 'bob', key), 'with a key');
      assertBusy(await order(svc.url, 'wanted', 'bob'), 'without a key');
      assertBusy(await order(svc.url, 'wanted', 'carol', key), 'the same key, another body');
      // Refused on arrival by the shed lane, before the body is read (express would answer 400 here),
      // and the caller's request id still comes back.
      const early = await call(svc.url, 'POST', '/api/orders', '{"productId":', { 'x-request-id': 'shed-1' });
      assertBusy(early, 'a body the lane never read');
      assert.equal(early.headers.get('x-request-id'), 'shed-1');
      assert.deepEqual(diffSnapshots(before, await snapshotRedis(infra.client, { exclude })), []);
      assert.equal(await infra.rows(), rowsBefore);
      assert.equal(await infra.client.exists('idem:{bob-once}'), 0);
    } finally {
      await hold.release();
      await locks.close();
    }
    assert.equal((await stuck).status, 202);

    const placed = await order(svc.url, 'wanted', 'bob', { 'idempotency-key': 'bob-once' });
    assert.equal(placed.status, 202, JSON.stringify(placed.body));
    const again = await order(svc.url, 'wanted', 'bob', { 'idempotency-key': 'bob-once' });
    assert.equal(again.status, 202);
    assert.equal(again.body.orderId, placed.body.orderId, 'the retry answers the same order');
    const s = await drained(svc.url, 'wanted');
    assert.equal(s.sold, 1);
    assert.equal(await infra.rows('wanted'), 1);
    const rec = await call(svc.url, 'GET', '/admin/products/wanted/reconcile', undefined, admin);
    assert.equal(rec.body.ok, true, JSON.stringify(rec.body));
  });
});

describe('the adaptive limit', () => {
  // Orders stuck on a held lock take at least LOCK_WAIT_MS, well above the target: each round of
  // them is one congestion signal. Orders on a free product are far below it.
  const { infra, svc } = useService({
    ADMISSION_LIMIT: '4',
    ADMISSION_MIN_LIMIT: '1',
    ADMISSION_MAX_LIMIT: '8',
    ADMISSION_TARGET_MS: '1000',
    ADMISSION_QUEUE_MS: '0',
    ADMISSION_MAX_LAG_MS: '0',
    WAITING_ROOM: 'off',
    LOCK_WAIT_MS: '1200',
  });

  it('is cut by slow orders and climbs back to its initial value once orders are fast again', async () => {
    await createSale(svc.url, 'slow', { stock: 100, shards: 1 });
    await createSale(svc.url, 'fast', { stock: 100, shards: 4 });
    const limit = () => gauge(svc.url, 'flashsale_admission_limit');
    assert.equal(await limit(), 4);
    const name = await shardLock(svc.url, 'slow');
    const locks = new LockClient(infra.redis.client());
    const hold = await locks.acquire(name, { leaseMs: 60_000 });
    let rounds = 0;
    try {
      // One round = as many slow orders as the limit admits; each round cuts it once.
      while ((await limit()) > 2) {
        rounds += 1;
        assert.ok(rounds <= 6, 'the limit did not fall');
        const n = await limit();
        const replies = await Promise.all(
          Array.from({ length: n }, (_, i) => order(svc.url, 'slow', `slow-${rounds}-${i}`)),
        );
        for (const r of replies) assertBusy(r, 'an order on a held shard');
      }
    } finally {
      await hold.release();
      await locks.close();
    }
    let fast = 0;
    while ((await limit()) < 4) {
      fast += 1;
      assert.ok(fast <= 10, `the limit stayed at ${await limit()} after 10 fast orders`);
      const r = await order(svc.url, 'fast', `fast-${fast}`);
      assert.equal(r.status, 202, JSON.stringify(r.body));
    }
    // Idle, it does not climb past the initial limit: growth above it needs the limit in use.
    for (let i = 0; i < 5; i++) await order(svc.url, 'fast', `idle-${i}`);
    assert.equal(await limit(), 4);
  });
});

describe('a shed order with the waiting room', () => {
  // As above (one order at a time, no waiting), with WAITING_ROOM on: refused buyers are queued.
  const { infra, svc } = useService(ONE_AT_A_TIME);

  it('is queued with a ticket, changes nothing, and is placed once the line reaches it', async () => {
    await createSale(svc.url, 'held-q', { stock: 5, shards: 1 });
    await createSale(svc.url, 'wanted-q', { stock: 5, shards: 2 });
    const name = await shardLock(svc.url, 'held-q');
    const locks = new LockClient(infra.redis.client());
    const hold = await locks.acquire(name, { leaseMs: 60_000 });
    const tickets: Record<string, string> = {};
    let stuck: Promise<Reply> | undefined;
    try {
      stuck = order(svc.url, 'held-q', 'first');
      await queuedOn(infra.client, name, 1);
      const exclude = (key: string) => key.includes('held-q') || key.startsWith('queue:{');
      const before = await snapshotRedis(infra.client, { exclude });
      for (const user of ['bob', 'carol']) {
        const r = await order(svc.url, 'wanted-q', user);
        assert.deepEqual([r.status, r.body.error], [429, 'queued'], JSON.stringify(r.body));
        assert.equal(r.body.available, 5);
        tickets[user] = String(r.body.ticket);
      }
      assert.deepEqual(diffSnapshots(before, await snapshotRedis(infra.client, { exclude })), []);
    } finally {
      await hold.release();
      await locks.close();
    }
    assert.equal((await stuck).status, 202);
    const orderIds = new Set<unknown>();
    for (const user of ['bob', 'carol']) {
      const placed = await until(`${user}'s turn`, async () => {
        const r = await order(svc.url, 'wanted-q', user, { 'queue-ticket': tickets[user] as string });
        assert.ok(r.status === 202 || r.body.error === 'queued', JSON.stringify(r.body));
        return r.status === 202 ? r : undefined;
      });
      orderIds.add(placed.body.orderId);
    }
    assert.equal(orderIds.size, 2);
    assert.equal((await drained(svc.url, 'wanted-q')).sold, 2);
  });
});
