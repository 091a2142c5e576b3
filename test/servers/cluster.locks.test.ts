// The lock library on a real Redis Cluster, against Redisson 3.22+'s behaviour there: waiters listen
// with SSUBSCRIBE and releases send "0" with SPUBLISH, on the lock's own slot, both ways round.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { LockClient } from '@flashsale/lock';
import type { Cluster } from 'ioredis';
import { track, until } from '../../harness/async.ts';
import { RedisCluster } from '../../harness/redis-cluster.ts';
import {
  assertWokenByUnlock,
  ForeignRedisson,
  redissonChannelName,
} from '../../packages/lock/test/support/redisson.ts';
import { clientOf } from '../../src/redis/connection.ts';

/** A lease longer than the test may run: a wait that ends did not end by this lease lapsing. */
const LONG = 600_000;

/** Sharded subscribers of `channel`, asked of the master serving its slot. */
async function shardNumsub(cluster: Cluster, channel: string): Promise<number> {
  const reply = (await clientOf(cluster, channel).call('pubsub', 'shardnumsub', channel)) as [string, number];
  return Number(reply[1]);
}

describe('Redisson on a Redis Cluster (sharded pub/sub) and this library exclude each other', () => {
  let cluster: RedisCluster;
  let admin: Cluster;
  const clients: LockClient[] = [];
  before(async () => {
    cluster = await RedisCluster.start();
    admin = cluster.client();
  });
  after(async () => {
    for (const c of clients) await c.close();
    await cluster?.stop();
  });
  const ours = () => {
    const c = new LockClient(cluster.client());
    clients.push(c);
    return c;
  };
  const foreign = () => new ForeignRedisson(cluster.client(), cluster.client(), true);

  for (const name of ['anyLock', 'stock:{p:1:0}:lock']) {
    it(`${name}: a Redisson holder's SPUBLISH release wakes our waiter, which listens with SSUBSCRIBE`, async () => {
      const channel = redissonChannelName(name);
      const java = foreign();
      const client = ours();
      assert.equal(await java.tryAcquireOnce(name, 1, LONG), null);
      const waiting = track(client.acquire(name, { leaseMs: 5000, waitMs: 60_000 }));
      await until(
        'our waiter listens on the sharded unlock channel',
        async () => (await shardNumsub(admin, channel)) === 1,
      );
      assert.equal(await admin.exists(name), 1, 'Redisson still holds it');
      assert.equal(waiting.settled(), false, 'still waiting while Redisson holds');
      // Redisson's sharded unlock: DEL + SPUBLISH "0".
      await assertWokenByUnlock(waiting.promise, () => java.unlock(name, 1, LONG), admin, name);
      assert.equal(await admin.exists(name), 0);
    });

    it(`${name}: our release SPUBLISHes "0", which wakes a Redisson waiter subscribed with SSUBSCRIBE`, async () => {
      const channel = redissonChannelName(name);
      const java = foreign();
      const client = ours();
      // Our lease outlasts the test: the Redisson waiter (which retries at the holder's TTL) can
      // only get in by our release's message on its sharded channel.
      const h = await client.acquire(name, { leaseMs: LONG });
      const waiting = track(java.lock(name, 7, { leaseMs: 10_000, waitMs: 60_000 }));
      await until('Redisson waiter subscribed', async () => (await shardNumsub(admin, channel)) === 1);
      await until('Redisson waiter sleeps on its latch', () => java.attempts >= 2);
      await h.release();
      assert.equal(await waiting.promise, true, 'woken by our release (its TTL wait outlasts its wait)');
      assert.deepEqual(java.received.get(channel), ['0'], 'the sharded "0" reached it');
      assert.deepEqual(await admin.hgetall(name), { [java.lockName(7)]: '1' });
      assert.equal(await java.unlock(name, 7, 10_000), 1);
    });
  }

  it('locks on all three masters: 4 of our clients and 4 Redisson threads count exactly, never overlapping', async () => {
    const names = ['c:{a}', 'c:{b}', 'c:{c}'];
    const java = foreign();
    const counters = new Map(names.map((n) => [n, 0]));
    const inside = new Set<string>();
    const enter = (name: string) => {
      assert.equal(inside.has(name), false, `two holders of ${name} at once`);
      inside.add(name);
    };
    const work = async (name: string) => {
      enter(name);
      const v = counters.get(name) ?? 0;
      await sleep(1); // a timer hop inside the critical section: overlaps would interleave here
      counters.set(name, v + 1);
      inside.delete(name);
    };
    const rounds = 10;
    await Promise.all([
      ...Array.from({ length: 4 }, async () => {
        const client = ours();
        for (let i = 0; i < rounds; i++) {
          for (const name of names)
            await client.withLock(name, { leaseMs: 10_000, waitMs: 30_000 }, () => work(name));
        }
      }),
      ...Array.from({ length: 4 }, async (_, thread) => {
        for (let i = 0; i < rounds; i++) {
          for (const name of names) {
            assert.equal(await java.lock(name, thread, { leaseMs: 10_000, waitMs: 30_000 }), true);
            await work(name);
            assert.equal(await java.unlock(name, thread, 10_000), 1);
          }
        }
      }),
    ]);
    for (const name of names) assert.equal(counters.get(name), 8 * rounds, name);
  });
});
