// Recovery of admin changes cut at the worst moments: an admin dying while it recovers, a retire round
// trip cut short, a switch cut after retiring: replays answer the same numbers, sold counted once.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { LockClient } from '@flashsale/lock';
import { admin, call } from '../harness/service.ts';
import { pruneRetired } from '../src/inventory/generation.ts';
import { adminLockName, retiredShardsKey, saleKey, shardKeys, shardStockKey } from '../src/inventory/keys.ts';
import { ShardStatus } from '../src/inventory/replies.ts';
import { JOURNAL, RETIRE } from '../src/inventory/scripts.ts';
import { type Body, crashKit } from './support/admin-crash.ts';
import { useService } from './support/suite.ts';

// The service's own worker would finish abandoned changes after SWEEP_AGE_MS; these tests look at
// the pending state first, so its recovery waits.
const { infra, svc } = useService({ SWEEP_AGE_MS: '600000' });
const { DYING_LEASE_MS, status, otherAdmin, dies, buyAll, saleWithSold, assertConserved, markerOf } =
  crashKit(infra, svc);

describe('an admin that dies while recovering, or mid-round-trip', () => {
  it('an admin dying while it recovers: the replayed retires answer the same numbers, sold counted once', async () => {
    const P = 'crash-twice';
    const g = await saleWithSold(P, { stock: 90, shards: 3 }, 9);
    await dies((a) => a.restock(P, 30));
    const markers = await Promise.all([0, 1, 2].map((i) => markerOf(P, g, i)));
    // The second admin replays the retires and dies before its switch too.
    await dies((a) => a.recover(P));
    assert.deepEqual(await Promise.all([0, 1, 2].map((i) => markerOf(P, g, i))), markers);
    const mid = await status(P);
    assert.deepEqual([mid.available, mid.sold, mid.total], [81, 9, 90]);
    assert.equal((mid.pending as Body).action, 'restock');

    assert.ok(await otherAdmin((a) => a.recover(P)));
    const s = await assertConserved(P);
    assert.deepEqual([s.available, s.sold, s.total], [111, 9, 120], 'restocked once, sold counted once');
    assert.equal(await infra.client.hget(saleKey(P), 'retiredSold'), '9');
    assert.equal((await buyAll(P, 'rest')).length, 111);
    await assertConserved(P);
  });

  it('a retire round trip cut short (journal, then only some shards retired): the rest retire on recovery', async () => {
    const P = 'crash-partial';
    const g = await saleWithSold(P, { stock: 40, shards: 4 }, 4);
    // What a pipeline cut after its third command leaves: the journal and two of four shards retired.
    const lockRedis = infra.redis.client();
    const locks = new LockClient(lockRedis, { watchdogLeaseMs: DYING_LEASE_MS });
    const redis = infra.redis.client();
    const adminHold = await locks.acquire(adminLockName(P));
    const keys = [0, 1, 2, 3].map((i) => shardKeys(shardStockKey(P, g, i)));
    await Promise.all(keys.map((k) => locks.acquire(k.lock, { owner: adminHold.owner })));
    assert.ok(
      (await JOURNAL.run(redis, {
        sale: saleKey(P),
        adminLock: adminLockName(P),
        owner: adminHold.owner,
        generation: g,
        change: JSON.stringify({ action: 'reshard', shards: 2, since: Date.now() }),
      })) > 0,
    );
    for (const k of keys.slice(0, 2)) {
      assert.equal(
        (
          await RETIRE.run(redis, {
            lock: k.lock,
            stock: k.stock,
            sold: k.sold,
            retired: k.retired,
            owner: adminHold.owner,
          })
        )[0],
        ShardStatus.ok,
      );
    }
    lockRedis.disconnect();
    await locks.close().catch(() => {});

    const mid = await status(P);
    assert.deepEqual([mid.available, mid.sold, mid.total], [36, 4, 40]);
    assert.deepEqual(
      (mid.shards as Body[]).map((s) => s.retired ?? false),
      [true, true, false, false],
    );
    // An admin change through the service finishes the reshard first.
    const r = await call(svc.url, 'POST', `/admin/products/${P}/reshard`, { shards: 3 }, admin);
    assert.equal(r.status, 200, JSON.stringify(r.body));
    assert.equal(r.body.available, 36);
    const s = await assertConserved(P);
    assert.deepEqual([s.available, s.sold, s.total, (s.shards as Body[]).length], [36, 4, 40, 3]);
    assert.equal((await buyAll(P, 'rest')).length, 36);
    await assertConserved(P);
  });

  it('a switch cut after adding the shards to the retired set: pruning keeps their markers for the recovery', async () => {
    const P = 'crash-sadd';
    const g = await saleWithSold(P, { stock: 60, shards: 2 }, 6);
    await dies((a) => a.reshard(P, 3));
    const current = [0, 1].map((i) => shardStockKey(P, g, i));
    await infra.client.sadd(retiredShardsKey(P), ...current);
    // Another admin's housekeeping, running outside the admin lock, meets this state.
    await pruneRetired(infra.client, P);
    assert.equal(await infra.client.exists(...current.map((k) => shardKeys(k).retired)), 2);
    const mid = await status(P);
    assert.deepEqual([mid.available, mid.sold, mid.reserved], [54, 6, 0]);
    assert.ok(await otherAdmin((a) => a.recover(P)));
    const s = await assertConserved(P);
    assert.deepEqual([s.available, s.sold, (s.shards as Body[]).length], [54, 6, 3]);
  });
});
