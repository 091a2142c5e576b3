// The inventory's Lua scripts on their own, called directly on a private Redis as typed scripts
// (reserve, switch) and through BuyerLimits (claim). Every case checks
// the reply AND the state the script left: stock, sold, fence, reservations, sale hash, shard list.
import assert from 'node:assert/strict';
import { after, before, beforeEach, describe, it } from 'node:test';
import { lockKeys } from '@flashsale/lock/toolkit';
import type { Redis } from 'ioredis';
import { RedisServer } from '../harness/redis-server.ts';
import { saleKey, shardKeys, shardListKey, shardStockKey } from '../src/inventory/keys.ts';
import { ShardStatus } from '../src/inventory/replies.ts';
import { RESERVE, SWITCH } from '../src/inventory/scripts.ts';
import { BuyerLimits } from '../src/orders/buyer-limit.ts';
import { LimitExceededError } from '../src/orders/errors.ts';
import { buyerClaimsKey, buyerKey } from '../src/orders/keys.ts';
import { diffSnapshots, snapshotRedis } from './support/redis-snapshot.ts';

let server: RedisServer;
let client: Redis;

before(async () => {
  server = await RedisServer.start();
  client = server.client();
});
after(async () => {
  await server.stop();
});
beforeEach(async () => {
  await client.flushall();
});

const OWNER = 'client-a:1';
const OTHER = 'client-b:7';
const SHARD = shardStockKey('P', 1, 0);
const K = shardKeys(SHARD);
const TOKEN_KEY = lockKeys(K.lock).token;

/** A shard as the admin leaves it, optionally held by `holder`. */
async function shard(stock: number, opts: { holder?: string; fence?: number; sold?: number } = {}) {
  await client.set(K.stock, stock);
  if (opts.sold !== undefined) await client.set(K.sold, opts.sold);
  if (opts.fence !== undefined) await client.set(K.fence, opts.fence);
  if (opts.holder) {
    await client.hset(K.lock, opts.holder, 1);
    await client.pexpire(K.lock, 30_000);
  }
}

function reserve(
  owner: string,
  token: number | '',
  quantity: number,
  orderId: string,
  json?: string,
  deadline = 0,
  window: [number, number] = [0, 0],
) {
  return RESERVE.run(client, {
    lock: K.lock,
    tokenCounter: TOKEN_KEY,
    stock: K.stock,
    fence: K.fence,
    sold: K.sold,
    reservations: K.reservations,
    owner,
    token,
    quantity,
    id: orderId,
    entry: json ?? JSON.stringify({ orderId, quantity }),
    deadline,
    startsAt: window[0],
    endsAt: window[1],
    fenced: '',
  });
}

async function shardState() {
  const [stock, sold, fence, res] = await Promise.all([
    client.get(K.stock),
    client.get(K.sold),
    client.get(K.fence),
    client.hgetall(K.reservations),
  ]);
  return { stock, sold, fence, res };
}

describe('reserve.lua', () => {
  it('is idempotent per order id: a replayed call (ioredis resend) answers ok again and takes nothing', async () => {
    await shard(10, { holder: OWNER });
    assert.deepEqual(await reserve(OWNER, 7, 3, 'replayed'), [ShardStatus.ok, 7, 7]);
    const after = await shardState();
    // Same call again, even with a newer hold: same answer, stock and sold unchanged, one reservation.
    assert.deepEqual(await reserve(OWNER, 9, 3, 'replayed'), [ShardStatus.ok, 7, 7]);
    assert.deepEqual(await shardState(), after);
    // ...and even when the resent acquire lost the lock to someone else meanwhile.
    await client.del(K.lock);
    await client.hset(K.lock, OTHER, 1);
    assert.deepEqual(await reserve(OWNER, 9, 3, 'replayed'), [ShardStatus.ok, 7, 7]);
    assert.deepEqual(await shardState(), after);
    assert.equal(after.stock, '7');
    assert.equal(after.sold, '3');
    assert.equal(Object.keys(after.res).length, 1);
  });

  it('refuses a reservation that reaches Redis past its deadline (-4) and writes nothing', async () => {
    await shard(10, { holder: OWNER });
    const [seconds] = await client.time();
    const now = Number(seconds) * 1000;
    const before = await snapshotRedis(client);
    assert.deepEqual(await reserve(OWNER, 5, 1, 'late', undefined, now - 1000), [ShardStatus.expired, 0, 0]);
    assert.deepEqual(diffSnapshots(before, await snapshotRedis(client)), []);
    assert.deepEqual(await reserve(OWNER, 5, 1, 'in-time', undefined, now + 60_000), [ShardStatus.ok, 9, 5]);
    // Past the deadline, an order already reserved still answers as it did (a resend after a lost reply).
    assert.deepEqual(await reserve(OWNER, 5, 1, 'in-time', undefined, now - 1000), [ShardStatus.ok, 9, 5]);
    assert.equal(await client.get(K.stock), '9');
  });

  it("judges the sale window by Redis' clock: -5 before startsAt, -6 from endsAt on, writing nothing", async () => {
    await shard(10, { holder: OWNER });
    const [seconds, micros] = await client.time();
    const now = Number(seconds) * 1000 + Math.floor(Number(micros) / 1000);
    const before = await snapshotRedis(client);
    // An opening a minute away is not yet; a close already passed is over (edges: the server's "now"
    // runs forward from the `now` read above, so only the far side of each bound can be pinned).
    const early = await reserve(OWNER, 5, 1, 'early', undefined, 0, [now + 60_000, 0]);
    assert.deepEqual(early, [ShardStatus.notStarted, 0, 0]);
    const late = await reserve(OWNER, 5, 1, 'late', undefined, 0, [0, now]);
    assert.deepEqual(late, [ShardStatus.ended, 0, 0]);
    assert.deepEqual(diffSnapshots(before, await snapshotRedis(client)), []);
    // Opened a millisecond before our reading, closing in a minute: reserved.
    const open = await reserve(OWNER, 5, 1, 'open', undefined, 0, [now - 1, now + 60_000]);
    assert.deepEqual(open, [ShardStatus.ok, 9, 5]);
  });

  it('without an owner: reserves under a fresh token when nobody holds the lock, leaving no hold', async () => {
    await shard(10, { fence: 4 });
    await client.set(TOKEN_KEY, 6);
    assert.deepEqual(await reserve('', '', 3, 'free'), [ShardStatus.ok, 7, 7]);
    const after = await shardState();
    assert.deepEqual([after.stock, after.sold, after.fence], ['7', '3', '7']);
    assert.equal(await client.exists(K.lock), 0, 'no hold left behind: nothing to release or wake');
    // Too big for the shard: refused without drawing a token.
    assert.deepEqual(await reserve('', '', 8, 'big'), [ShardStatus.insufficient, 7, 0]);
    assert.equal(await client.get(TOKEN_KEY), '7');
    // A replay (ioredis resend) answers as the first time, even once the lock is held.
    await client.hset(K.lock, OTHER, 1);
    assert.deepEqual(await reserve('', '', 3, 'free'), [ShardStatus.ok, 7, 7]);
  });

  it('without an owner: answers held (-7) and writes nothing while anyone holds the lock', async () => {
    await shard(10, { holder: OTHER, fence: 3 });
    const before = await snapshotRedis(client);
    assert.deepEqual(await reserve('', '', 1, 'o1'), [ShardStatus.held, 0, 0]);
    assert.deepEqual(diffSnapshots(before, await snapshotRedis(client)), []);
  });

  it('refuses a caller that does not hold the shard lock (-1) and writes nothing', async () => {
    await shard(10, { holder: OTHER, fence: 3 });
    const before = await snapshotRedis(client);
    assert.deepEqual(await reserve(OWNER, 5, 1, 'o1'), [ShardStatus.notOwner, 0, 0]);
    assert.deepEqual(diffSnapshots(before, await snapshotRedis(client)), []);
    // Nobody holds it at all: same refusal.
    await client.del(K.lock);
    const before2 = await snapshotRedis(client);
    assert.deepEqual(await reserve(OWNER, 5, 1, 'o1'), [ShardStatus.notOwner, 0, 0]);
    assert.deepEqual(diffSnapshots(before2, await snapshotRedis(client)), []);
  });

  it('refuses a holder whose token is older than the fence (-2) and writes nothing', async () => {
    await shard(10, { holder: OWNER, fence: 9 });
    const before = await snapshotRedis(client);
    assert.deepEqual(await reserve(OWNER, 8, 1, 'o1'), [ShardStatus.staleToken, 0, 8]);
    assert.deepEqual(diffSnapshots(before, await snapshotRedis(client)), []);
    assert.equal(await client.get(K.fence), '9');
  });

  it('accepts a token equal to the fence (same hold, second decrement)', async () => {
    await shard(10, { holder: OWNER, fence: 9 });
    assert.deepEqual(await reserve(OWNER, 9, 2, 'o1'), [ShardStatus.ok, 8, 9]);
    assert.deepEqual(await reserve(OWNER, 9, 3, 'o2'), [ShardStatus.ok, 5, 9]);
    const s = await shardState();
    assert.equal(s.stock, '5');
    assert.equal(s.sold, '5');
    assert.equal(s.fence, '9');
    assert.deepEqual(Object.keys(s.res).sort(), ['o1', 'o2']);
  });

  it('answers -3 on a retired shard (stock key gone): no stock, sold or reservation written', async () => {
    await client.hset(K.lock, OWNER, 1);
    assert.deepEqual(await reserve(OWNER, 4, 1, 'o1'), [ShardStatus.retired, 0, 4]);
    const s = await shardState();
    assert.equal(s.stock, null, 'a retired shard must not be re-created');
    assert.equal(s.sold, null);
    assert.deepEqual(s.res, {});
  });

  it('a refusal on a retired shard leaves no key behind (not even the fence)', async () => {
    await client.hset(K.lock, OWNER, 1);
    const before = await snapshotRedis(client);
    assert.equal((await reserve(OWNER, 4, 1, 'o1'))[0], ShardStatus.retired);
    assert.deepEqual(diffSnapshots(before, await snapshotRedis(client)), []);
  });

  it('answers 0 with the stock left when the shard holds fewer units than asked', async () => {
    await shard(3, { holder: OWNER, sold: 7 });
    assert.deepEqual(await reserve(OWNER, 2, 4, 'o1'), [ShardStatus.insufficient, 3, 2]);
    const s = await shardState();
    assert.equal(s.stock, '3');
    assert.equal(s.sold, '7');
    assert.deepEqual(s.res, {});
    // Exactly what is left still goes through, down to zero and not below.
    assert.deepEqual(await reserve(OWNER, 2, 3, 'o2'), [ShardStatus.ok, 0, 2]);
    assert.deepEqual(await reserve(OWNER, 2, 1, 'o3'), [ShardStatus.insufficient, 0, 2]);
    assert.equal(await client.get(K.stock), '0');
    assert.equal(await client.get(K.sold), '10');
  });

  it('reserves: decrements stock, counts sold, writes the reservation with its token, advances the fence', async () => {
    await shard(10, { holder: OWNER, fence: 4 });
    const record = { orderId: 'P.1.0.abc', productId: 'P', userId: 'u1', quantity: 3 };
    const reply = await reserve(OWNER, 6, 3, record.orderId, JSON.stringify(record));
    assert.deepEqual(reply, [ShardStatus.ok, 7, 6]);
    const s = await shardState();
    assert.equal(s.stock, '7');
    assert.equal(s.sold, '3');
    assert.equal(s.fence, '6');
    assert.deepEqual(Object.keys(s.res), [record.orderId]);
    assert.deepEqual(JSON.parse(s.res[record.orderId] as string), { ...record, token: 6 });
    // The older token (4) is now fenced off even for an owner that is still in the hash.
    assert.deepEqual(await reserve(OWNER, 5, 1, 'late'), [ShardStatus.staleToken, 0, 5]);
    assert.equal(await client.get(K.stock), '7');
  });

  it('with token "" reads the token from the lock\'s counter (acquired in the same pipeline)', async () => {
    await shard(10, { holder: OWNER, fence: 11 });
    await client.set(TOKEN_KEY, 12);
    assert.deepEqual(await reserve(OWNER, '', 1, 'o1'), [ShardStatus.ok, 9, 12]);
    assert.equal(await client.get(K.fence), '12');
    assert.equal(JSON.parse((await client.hget(K.reservations, 'o1')) as string).token, 12);
    // A counter below the fence (the fence came from a newer hold) is refused like a stale token.
    await client.set(TOKEN_KEY, 10);
    assert.deepEqual(await reserve(OWNER, '', 1, 'o2'), [ShardStatus.staleToken, 0, 10]);
    assert.equal(await client.get(K.stock), '9');
    assert.equal(await client.hget(K.reservations, 'o2'), null);
  });

  it('with token "" and no counter yet, takes token 0 (first ever hold on a fresh shard)', async () => {
    await shard(2, { holder: OWNER });
    assert.deepEqual(await reserve(OWNER, '', 1, 'o1'), [ShardStatus.ok, 1, 0]);
    assert.equal(JSON.parse((await client.hget(K.reservations, 'o1')) as string).token, 0);
  });

  it('runs atomically: 200 concurrent reserves of 1 on 50 units accept exactly 50', async () => {
    await shard(50, { holder: OWNER, fence: 1 });
    const replies = await Promise.all(Array.from({ length: 200 }, (_, i) => reserve(OWNER, 1, 1, `o${i}`)));
    assert.equal(replies.filter(([s]) => s === ShardStatus.ok).length, 50);
    assert.equal(replies.filter(([s]) => s === ShardStatus.insufficient).length, 150);
    const s = await shardState();
    assert.equal(s.stock, '0');
    assert.equal(s.sold, '50');
    assert.equal(Object.keys(s.res).length, 50);
  });
});

describe('switch.lua', () => {
  const SALE = saleKey('P');
  const LIST = shardListKey('P');
  const sw = (
    gen: number,
    limit: number,
    totalDelta: number,
    soldDelta: number,
    keys: string[],
    now = 1000,
    window: [string, string] = ['', ''],
    payment: [timeoutSec: number, returningTaken: number] = [0, 0],
  ) =>
    SWITCH.run(client, {
      sale: SALE,
      shardList: LIST,
      generation: gen,
      perUserLimit: limit,
      totalDelta,
      retiredSold: soldDelta,
      createdAt: now,
      startsAt: window[0],
      endsAt: window[1],
      paymentTimeoutSec: payment[0],
      returningTaken: payment[1],
      stockKeys: keys,
    });
  const keysOf = (gen: number, n: number) => Array.from({ length: n }, (_, i) => shardStockKey('P', gen, i));

  it('creates: list and hash written together', async () => {
    assert.equal(await sw(1, 2, 100, 0, keysOf(1, 4)), 1);
    assert.deepEqual(await client.lrange(LIST, 0, -1), keysOf(1, 4));
    assert.deepEqual(await client.hgetall(SALE), {
      gen: '1',
      shards: '4',
      perUserLimit: '2',
      state: 'active',
      createdAt: '1000',
      total: '100',
      retiredSold: '0',
      paymentTimeoutSec: '0',
    });
  });

  it('sets the payment timeout and takes exactly the returned units it puts back off `returning`', async () => {
    await client.del(SALE, LIST);
    await sw(1, 0, 10, 0, keysOf(1, 2), 1000, ['', ''], [30, 0]);
    await client.hset(SALE, 'returning', 5);
    assert.equal(await sw(2, 0, 0, 0, keysOf(2, 2), 2000, ['', ''], [30, 3]), 1);
    const h = await client.hgetall(SALE);
    assert.deepEqual([h.gen, h.paymentTimeoutSec, h.returning, h.total], ['2', '30', '2', '10']);
    // Refused (not newer): nothing taken.
    assert.equal(await sw(2, 0, 0, 0, keysOf(2, 2), 2000, ['', ''], [30, 2]), 0);
    assert.equal(await client.hget(SALE, 'returning'), '2');
  });

  it('switches to a newer generation: replaces the list, adds total and retiredSold, keeps createdAt', async () => {
    await sw(1, 0, 100, 0, keysOf(1, 4));
    assert.equal(await sw(2, 5, -10, 30, keysOf(2, 2), 2000), 1);
    assert.deepEqual(await client.lrange(LIST, 0, -1), keysOf(2, 2));
    const h = await client.hgetall(SALE);
    assert.deepEqual(
      [h.gen, h.shards, h.perUserLimit, h.total, h.retiredSold, h.createdAt],
      ['2', '2', '5', '90', '30', '1000'],
    );
    assert.equal(await sw(3, 5, 0, 12, keysOf(3, 3), 3000), 1);
    const h3 = await client.hgetall(SALE);
    assert.deepEqual([h3.gen, h3.total, h3.retiredSold], ['3', '90', '42']);
  });

  it('refuses an older or the same generation (0) and changes neither list nor hash', async () => {
    await sw(5, 1, 100, 0, keysOf(5, 2));
    const before = await snapshotRedis(client);
    assert.equal(await sw(4, 9, 50, 50, keysOf(4, 8)), 0);
    assert.equal(await sw(5, 9, 50, 50, keysOf(5, 8)), 0);
    assert.deepEqual(diffSnapshots(before, await snapshotRedis(client)), []);
  });
});

describe('claim.lua and give-back.lua via BuyerLimits', () => {
  const key = buyerKey('P', 'alice');
  let n = 0;
  const ticket = () => (++n).toString(16).padStart(24, '0');

  it('claims up to the limit; past it throws limit_exceeded and changes nothing', async () => {
    const limits = new BuyerLimits(client);
    await limits.claim('P', 'alice', 2, 5, ticket());
    await limits.claim('P', 'alice', 3, 5, ticket());
    assert.equal(await client.get(key), '5');
    // Every key kept for a buyer lapses some day (a 30-day count, refreshed by each claim).
    assert.ok((await client.ttl(key)) > 29 * 24 * 3600, 'the count has a TTL');
    const claims = await client.hgetall(buyerClaimsKey('P', 'alice'));
    await assert.rejects(limits.claim('P', 'alice', 1, 5, ticket()), (err: unknown) => {
      assert.ok(err instanceof LimitExceededError);
      assert.equal(err.code, 'limit_exceeded');
      return true;
    });
    assert.equal(await client.get(key), '5');
    assert.deepEqual(
      await client.hgetall(buyerClaimsKey('P', 'alice')),
      claims,
      'a refused claim is not recorded',
    );
    // A claim bigger than the whole limit, on a fresh user, leaves its counter at 0.
    await assert.rejects(limits.claim('P', 'bob', 6, 5, ticket()), LimitExceededError);
    assert.equal(Number((await client.get(buyerKey('P', 'bob'))) ?? 0), 0);
  });

  it('gives a claim back once, which makes room for a later claim; other tickets give nothing back', async () => {
    const limits = new BuyerLimits(client);
    const t = ticket();
    await limits.claim('P', 'alice', 2, 2, t);
    await assert.rejects(limits.claim('P', 'alice', 1, 2, ticket()), LimitExceededError);
    assert.equal(await limits.giveBack('P', 'alice', ticket()), 0, 'a ticket that claimed nothing');
    assert.equal(await client.get(key), '2');
    assert.equal(await limits.giveBack('P', 'alice', t), 2);
    assert.equal(await limits.giveBack('P', 'alice', t), 0, 'given back already (a resend, or a resolver)');
    assert.equal(await client.get(key), null, 'a count back at zero is deleted');
    await limits.claim('P', 'alice', 1, 2, ticket());
    assert.equal(await client.get(key), '1');
  });

  it('a replayed claim (same ticket, as ioredis resends it) counts once', async () => {
    const limits = new BuyerLimits(client);
    const t = ticket();
    await limits.claim('P', 'alice', 1, 2, t);
    await limits.claim('P', 'alice', 1, 2, t);
    assert.equal(await client.get(key), '1');
    await limits.claim('P', 'alice', 1, 2, ticket());
    assert.equal(await client.get(key), '2');
    assert.ok(
      (await client.ttl(buyerClaimsKey('P', 'alice'))) > 24 * 3600,
      'claims outlive Idempotency-Keys',
    );
  });

  it('is atomic: 100 concurrent claims of 1 with limit 7 let exactly 7 through', async () => {
    const limits = new BuyerLimits(client);
    const results = await Promise.allSettled(
      Array.from({ length: 100 }, () => limits.claim('P', 'alice', 1, 7, ticket())),
    );
    assert.equal(results.filter((r) => r.status === 'fulfilled').length, 7);
    assert.ok(
      results.every((r) => r.status === 'fulfilled' || r.reason instanceof LimitExceededError),
      'every refusal is limit_exceeded',
    );
    assert.equal(await client.get(key), '7');
    assert.equal(await client.hlen(buyerClaimsKey('P', 'alice')), 7);
  });

  it('keeps users and products apart', async () => {
    const limits = new BuyerLimits(client);
    await limits.claim('P', 'alice', 2, 2, ticket());
    await limits.claim('P', 'bob', 2, 2, ticket());
    await limits.claim('Q', 'alice', 2, 2, ticket());
    assert.deepEqual(
      await client.mget(buyerKey('P', 'alice'), buyerKey('P', 'bob'), buyerKey('Q', 'alice')),
      ['2', '2', '2'],
    );
  });
});
