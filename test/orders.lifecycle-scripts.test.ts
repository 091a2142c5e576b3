// The pay-or-expire scripts on their own: register.lua (idempotent, never brings a decided order
// back), pay-or-cancel.lua (one fate per order; paying at or after the deadline expires it) and
// expire-due.lua (each due order expired once, its units to `returning`), with Redis' own clock.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { Redis } from 'ioredis';
import { redisNow } from '../harness/async.ts';
import { RedisServer } from '../harness/redis-server.ts';
import { lifecycleKeys } from '../src/inventory/keys.ts';
import { decideFate, expireDue, fateOf, registerForExpiry } from '../src/orders/lifecycle.ts';
import type { OrderRecord } from '../src/orders/order.ts';

let server: RedisServer;
let redis: Redis;
before(async () => {
  server = await RedisServer.start();
  redis = server.client();
});
after(() => server.stop());

let seq = 0;
function record(productId: string, payBy: number | undefined, quantity = 1, userId = 'u'): OrderRecord {
  seq += 1;
  return {
    orderId: `${productId}.1.0.${seq.toString(16).padStart(24, '0')}`,
    productId,
    userId,
    quantity,
    shardKey: `stock:{${productId}:1:0}`,
    generation: 1,
    shardIndex: 0,
    token: seq,
    reservedAt: Date.now(),
    ...(payBy !== undefined && { payBy }),
  };
}
const counters = async (productId: string) => {
  const [paid, expired, cancelled, returning, returned] = await redis.hmget(
    lifecycleKeys(productId).sale,
    'paid',
    'expired',
    'cancelled',
    'returning',
    'returned',
  );
  return [paid, expired, cancelled, returning, returned].map((v) => Number(v ?? 0));
};
const settling = async (productId: string) =>
  Object.fromEntries(
    Object.entries(await redis.hgetall(lifecycleKeys(productId).settle)).map(([id, v]) => [
      id,
      (JSON.parse(v) as { status: string }).status,
    ]),
  );

describe('register.lua', () => {
  it('registers a timed order once, skips untimed ones, and never registers a decided order again', async () => {
    const k = lifecycleKeys('reg');
    const timed = record('reg', 1_900_000_000_000, 2, 'amy');
    await registerForExpiry(redis, [timed, record('reg', undefined)]);
    await registerForExpiry(redis, [timed]);
    assert.deepEqual(await redis.zrange(k.due, 0, -1, 'WITHSCORES'), [timed.orderId, '1900000000000']);
    assert.deepEqual(JSON.parse((await redis.hget(k.unpaid, timed.orderId)) as string), {
      userId: 'amy',
      quantity: 2,
    });
    assert.deepEqual(await decideFate(redis, timed, 'pay'), { fate: 'paid', now: true });
    assert.equal(await redis.zcard(k.due), 0);
    assert.equal(await redis.hlen(k.unpaid), 0);
    await registerForExpiry(redis, [timed]);
    assert.equal(await redis.zcard(k.due), 0, 'a late registration brings nothing back');
  });
});

describe('pay-or-cancel.lua', () => {
  it('pays once; paying again answers paid; cancelling a paid order answers paid (nothing returned)', async () => {
    const o = record('poc-1', (await redisNow(redis)) + 60_000, 3);
    await registerForExpiry(redis, [o]);
    assert.deepEqual(await decideFate(redis, o, 'pay'), { fate: 'paid', now: true });
    assert.deepEqual(await decideFate(redis, o, 'pay'), { fate: 'paid', now: false });
    assert.deepEqual(await decideFate(redis, o, 'cancel'), { fate: 'paid', now: false });
    assert.deepEqual(await counters('poc-1'), [1, 0, 0, 0, 0]);
    assert.deepEqual(await settling('poc-1'), { [o.orderId]: 'paid' });
  });

  it('cancels once: its units go to returning once; paying a cancelled order answers cancelled', async () => {
    const o = record('poc-2', (await redisNow(redis)) + 60_000, 3);
    await registerForExpiry(redis, [o]);
    assert.deepEqual(await decideFate(redis, o, 'cancel'), { fate: 'cancelled', now: true });
    assert.deepEqual(await decideFate(redis, o, 'cancel'), { fate: 'cancelled', now: false });
    assert.deepEqual(await decideFate(redis, o, 'pay'), { fate: 'cancelled', now: false });
    assert.deepEqual(await counters('poc-2'), [0, 0, 1, 3, 3]);
    assert.equal(await fateOf(redis, 'poc-2', o.orderId), 'cancelled');
    assert.equal(await redis.zcard(lifecycleKeys('poc-2').due), 0);
  });

  it("paying at or after the deadline (Redis' clock) expires the order instead", async () => {
    const o = record('poc-3', (await redisNow(redis)) - 1, 2);
    assert.deepEqual(await decideFate(redis, o, 'pay'), { fate: 'expired', now: true });
    assert.deepEqual(await decideFate(redis, o, 'pay'), { fate: 'expired', now: false });
    assert.deepEqual(await counters('poc-3'), [0, 1, 0, 2, 2]);
  });

  it('an order without a deadline can be paid whenever', async () => {
    const o = record('poc-4', undefined);
    assert.deepEqual(await decideFate(redis, o, 'pay'), { fate: 'paid', now: true });
  });
});

describe('expire-due.lua', () => {
  it('expires only what is due, each once, oldest first, at most `limit` per call', async () => {
    const now = await redisNow(redis);
    const due = [record('exp', now - 3000, 1), record('exp', now - 2000, 2), record('exp', now - 1000, 4)];
    const later = record('exp', now + 3_600_000, 8);
    await registerForExpiry(redis, [...due, later]);
    assert.deepEqual(await expireDue(redis, 'exp', 2), { orders: 2, units: 3, returning: 3 });
    assert.deepEqual(await expireDue(redis, 'exp', 2), { orders: 1, units: 4, returning: 7 });
    assert.deepEqual(await expireDue(redis, 'exp', 2), { orders: 0, units: 0, returning: 7 });
    assert.deepEqual(await counters('exp'), [0, 3, 0, 7, 7]);
    assert.deepEqual(await redis.zrange(lifecycleKeys('exp').due, 0, -1), [later.orderId]);
    for (const o of due) assert.deepEqual(await decideFate(redis, o, 'pay'), { fate: 'expired', now: false });
  });

  it('pay against expiry at the deadline, 200 orders at once: each gets exactly one fate', async () => {
    const payBy = (await redisNow(redis)) + 300;
    const orders = Array.from({ length: 200 }, (_, i) => record('race', payBy, 1 + (i % 3), `u${i}`));
    await registerForExpiry(redis, orders);
    // Sweeps and payments interleave around the deadline; every call is atomic.
    const sweeps = (async () => {
      let expired = 0;
      while ((await redisNow(redis)) < payBy + 50) expired += (await expireDue(redis, 'race', 7)).orders;
      return expired + (await expireDue(redis, 'race', 1000)).orders;
    })();
    const pays = await Promise.all(
      orders.map(async (o, i) => {
        while ((await redisNow(redis)) < payBy - 20 + (i % 40)) {
          // Payments arrive spread over the 40 ms around the deadline.
        }
        return decideFate(redis, o, 'pay');
      }),
    );
    const expiredBySweep = await sweeps;
    const paid = orders.filter((_, i) => pays[i]?.fate === 'paid');
    const expired = orders.filter((_, i) => pays[i]?.fate === 'expired');
    assert.equal(paid.length + expired.length, 200);
    // Each expiry was made once: by a sweep, or by a payment that came too late.
    const expiredByPayment = pays.filter((p) => p.fate === 'expired' && p.now).length;
    assert.equal(expiredBySweep + expiredByPayment, expired.length);
    for (const o of orders) {
      const fate = await fateOf(redis, 'race', o.orderId);
      assert.equal(fate, paid.includes(o) ? 'paid' : 'expired');
    }
    const units = (list: OrderRecord[]) => list.reduce((a, o) => a + o.quantity, 0);
    assert.deepEqual(await counters('race'), [
      paid.length,
      expired.length,
      0,
      units(expired),
      units(expired),
    ]);
    assert.equal(await redis.zcard(lifecycleKeys('race').due), 0);
  });
});
