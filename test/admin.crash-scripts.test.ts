// The scripts that keep an admin change safe across a crash, on their own: retire-recorded.lua
// (hand back stock and sold, record them in a marker, replay-safe), journal.lua and switch.lua.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { adminLockName, saleKey, shardKeys, shardListKey, shardStockKey } from '../src/inventory/keys.ts';
import { ShardStatus } from '../src/inventory/replies.ts';
import { JOURNAL, RETIRE, SWITCH } from '../src/inventory/scripts.ts';
import { diffSnapshots, snapshotRedis } from './support/redis-snapshot.ts';
import { useService } from './support/suite.ts';

// The service's own worker would finish abandoned changes after SWEEP_AGE_MS; these tests look at
// the pending state first, so its recovery waits (the last test runs the recovery loop itself).
const { infra } = useService({ SWEEP_AGE_MS: '600000' });

/** Everything of a product in Redis, for "changes nothing" checks (the service's own keys tick on). */
const snapshotOf = (productId: string) =>
  snapshotRedis(infra.client, { exclude: (key) => !key.includes(`{${productId}`) });

describe('retire-recorded.lua', () => {
  const OWNER = 'admin-a:1';
  const k = (productId: string) => shardKeys(shardStockKey(productId, 1, 0));
  const retire = (productId: string, owner = OWNER) => {
    const s = k(productId);
    return RETIRE.run(infra.client, {
      lock: s.lock,
      stock: s.stock,
      sold: s.sold,
      retired: s.retired,
      owner,
    });
  };
  async function shard(productId: string, stock: number, sold: number) {
    const s = k(productId);
    await infra.client.set(s.stock, stock);
    await infra.client.set(s.sold, sold);
    await infra.client.hset(s.lock, OWNER, 1);
    await infra.client.hset(s.reservations, 'o1', '{"orderId":"o1"}');
  }

  it('hands back stock and sold, deletes both, records them in the marker, keeps the reservations', async () => {
    await shard('rr-once', 7, 3);
    assert.deepEqual(await retire('rr-once'), [ShardStatus.ok, 7, 3]);
    const s = k('rr-once');
    assert.deepEqual(await infra.client.mget(s.stock, s.sold), [null, null]);
    assert.deepEqual(JSON.parse((await infra.client.get(s.retired)) as string), { stock: 7, sold: 3 });
    assert.deepEqual(await infra.client.hgetall(s.reservations), { o1: '{"orderId":"o1"}' });
  });

  it('a replayed retire answers the recorded numbers (-3) and changes nothing', async () => {
    await shard('rr-replay', 1_000_000_000, 12);
    assert.deepEqual(await retire('rr-replay'), [ShardStatus.ok, 1_000_000_000, 12]);
    const before = await snapshotOf('rr-replay');
    for (let i = 0; i < 3; i++) {
      assert.deepEqual(await retire('rr-replay'), [ShardStatus.retired, 1_000_000_000, 12]);
    }
    assert.deepEqual(diffSnapshots(before, await snapshotOf('rr-replay')), []);
  });

  it('refuses a caller that does not hold the lock (-1), retired or not, and writes nothing', async () => {
    await shard('rr-owner', 5, 1);
    const before = await snapshotOf('rr-owner');
    assert.deepEqual(await retire('rr-owner', 'admin-b:9'), [ShardStatus.notOwner, 0, 0]);
    assert.deepEqual(diffSnapshots(before, await snapshotOf('rr-owner')), []);
    await retire('rr-owner');
    assert.deepEqual(await retire('rr-owner', 'admin-b:9'), [ShardStatus.notOwner, 0, 0]);
  });

  it('a shard retired without a marker (before markers existed) answers -3 with 0, 0 and writes nothing', async () => {
    await infra.client.hset(k('rr-old').lock, OWNER, 1);
    const before = await snapshotOf('rr-old');
    assert.deepEqual(await retire('rr-old'), [ShardStatus.retired, 0, 0]);
    assert.deepEqual(diffSnapshots(before, await snapshotOf('rr-old')), []);
  });
});

describe('journal.lua and switch.lua', () => {
  const OWNER = 'admin-a:1';
  const journal = (productId: string, fromGen: number, owner = OWNER) =>
    JOURNAL.run(infra.client, {
      sale: saleKey(productId),
      adminLock: adminLockName(productId),
      owner,
      generation: fromGen,
      change: '{"action":"reshard"}',
    });
  const sw = (productId: string, generation: number) =>
    SWITCH.run(infra.client, {
      sale: saleKey(productId),
      shardList: shardListKey(productId),
      generation,
      perUserLimit: 0,
      totalDelta: 0,
      retiredSold: 0,
      createdAt: 1,
      startsAt: '',
      endsAt: '',
      paymentTimeoutSec: 0,
      returningTaken: 0,
      stockKeys: [shardStockKey(productId, generation, 0)],
    });

  it('journals for the admin lock holder at the generation it read, reserving the next generation', async () => {
    const P = 'jr-ok';
    await infra.client.hset(saleKey(P), 'gen', 4, 'nextGen', 6);
    await infra.client.hset(adminLockName(P), OWNER, 1);
    assert.equal(await journal(P, 4), 7);
    assert.deepEqual(await infra.client.hmget(saleKey(P), 'gen', 'nextGen', 'pending'), [
      '4',
      '7',
      '{"action":"reshard"}',
    ]);
    // A new sale starts from generation 0.
    await infra.client.hset(adminLockName('jr-new'), OWNER, 1);
    assert.equal(await journal('jr-new', 0), 1);
  });

  it('refuses (0) and writes nothing when the caller lost the admin lock or the generation moved', async () => {
    const P = 'jr-refused';
    await infra.client.hset(saleKey(P), 'gen', 4, 'nextGen', 6);
    await infra.client.hset(adminLockName(P), 'admin-b:2', 1);
    const before = await snapshotOf(P);
    assert.equal(await journal(P, 4), 0, 'not the holder');
    assert.deepEqual(diffSnapshots(before, await snapshotOf(P)), []);
    await infra.client.hset(adminLockName(P), OWNER, 1);
    const held = await snapshotOf(P);
    assert.equal(await journal(P, 3), 0, 'generation moved since it was read');
    assert.deepEqual(diffSnapshots(held, await snapshotOf(P)), []);
  });

  it('switching ends the journal; a refused switch leaves it', async () => {
    const P = 'jr-switch';
    await infra.client.hset(adminLockName(P), OWNER, 1);
    const g = await journal(P, 0);
    assert.equal(await sw(P, g), 1);
    assert.equal(await infra.client.hexists(saleKey(P), 'pending'), 0);
    assert.equal(await journal(P, g), g + 1);
    assert.equal(await sw(P, g), 0, 'not newer');
    assert.equal(await infra.client.hget(saleKey(P), 'pending'), '{"action":"reshard"}');
  });
});
