// An admin that dies between retiring a sale's shards and switching to the new generation (DESIGN.md
// §5, invariants 1–3): the units it took are in transit, not lost, and recovery finishes every change.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { SaleAdmin } from '../src/inventory/admin.ts';
import {
  adminLockName,
  retiredShardsKey,
  saleKey,
  shardKeys,
  shardListKey,
  shardStockKey,
} from '../src/inventory/keys.ts';
import { startAdminRecovery } from '../src/inventory/recovery.ts';
import {
  type InventoryPipeline,
  replyInts,
  ShardStatus,
  withInventoryScripts,
} from '../src/inventory/scripts.ts';
import { LockClient } from '../src/lock/index.ts';
import { until } from './support/async.ts';
import { admin, call, createSale, drained } from './support/service.ts';
import { useService } from './support/suite.ts';

// The service's own worker would finish abandoned changes after SWEEP_AGE_MS; these tests look at
// the pending state first, so its recovery waits (the last test runs the recovery loop itself).
const { infra, svc } = useService({ SWEEP_AGE_MS: '600000' });

/** Lease of a dying admin's locks: how long its holds outlive it. */
const DYING_LEASE_MS = 1000;

type Body = Record<string, unknown>;

const status = async (productId: string): Promise<Body> => {
  const r = await call(svc.url, 'GET', `/admin/products/${productId}`, undefined, admin);
  assert.equal(r.status, 200, JSON.stringify(r.body));
  return r.body;
};
const reconcile = async (productId: string): Promise<Body> =>
  (await call(svc.url, 'GET', `/admin/products/${productId}/reconcile`, undefined, admin)).body;
const order = (productId: string, userId: string) =>
  call(svc.url, 'POST', '/api/orders', { productId, userId });

/** Runs `fn` with an admin in a process of its own: own connections, own lock client. */
async function otherAdmin<T>(fn: (a: SaleAdmin) => Promise<T>): Promise<T> {
  const locks = new LockClient(infra.redis.client());
  try {
    return await fn(new SaleAdmin(infra.redis.client(), locks));
  } finally {
    await locks.close();
  }
}

/**
 * An admin that dies right before sending the round trip that switches (the pipeline holding
 * switch.lua): its connections drop, its watchdog stops, and its call rejects (with whatever its
 * dead connections answer first).
 */
function dyingAdmin(): { admin: SaleAdmin; died: () => boolean } {
  let died = false;
  const redis = withInventoryScripts(infra.redis.client());
  const lockRedis = infra.redis.client();
  const locks = new LockClient(lockRedis, { watchdogLeaseMs: DYING_LEASE_MS });
  const die = async () => {
    died = true;
    lockRedis.disconnect();
    redis.disconnect();
    await locks.close().catch(() => {});
  };
  const pipeline = redis.pipeline.bind(redis);
  Object.assign(redis, {
    pipeline: () => {
      const p = pipeline() as InventoryPipeline;
      const exec = p.exec.bind(p);
      const flashsaleSwitch = p.flashsaleSwitch.bind(p);
      let switching = false;
      return Object.assign(p, {
        flashsaleSwitch: (...args: (string | number)[]) => {
          switching = true;
          return flashsaleSwitch(...args);
        },
        exec: async () => {
          if (!switching) return exec();
          await die();
          throw new Error('admin process died before switching');
        },
      });
    },
  });
  return { admin: new SaleAdmin(redis, locks), died: () => died };
}

/** Runs `change` on a dying admin: it must die before switching, leaving the change pending. */
async function dies(change: (a: SaleAdmin) => Promise<unknown>): Promise<void> {
  const dying = dyingAdmin();
  await assert.rejects(change(dying.admin));
  assert.ok(dying.died(), 'the admin died before switching');
}

/** Buys every unit left, 20 buyers at once, one unit per order; returns the accepted order ids. */
async function buyAll(productId: string, tag: string): Promise<string[]> {
  const accepted: string[] = [];
  let n = 0;
  await Promise.all(
    Array.from({ length: 20 }, async () => {
      for (;;) {
        const r = await order(productId, `${tag}${n++}`);
        if (r.status === 202) accepted.push(r.body.orderId as string);
        else if (r.body.error === 'sold_out') return;
        else {
          assert.equal(r.status, 429, JSON.stringify(r.body));
          await sleep(10);
        }
      }
    }),
  );
  return accepted;
}

async function placeOrders(productId: string, n: number, tag: string): Promise<void> {
  for (let i = 0; i < n; i++) assert.equal((await order(productId, `${tag}${i}`)).status, 202);
}

/** A new sale of which `sold` units are sold and persisted; resolves to its generation. */
async function saleWithSold(productId: string, spec: { stock: number; shards: number }, sold: number) {
  const generation = await createSale(svc.url, productId, spec);
  await placeOrders(productId, sold, 'early');
  await drained(svc.url, productId);
  return generation;
}

/** Conservation (DESIGN.md §5.2) on the service's own books, and the reconcile agreeing. */
async function assertConserved(productId: string): Promise<Body> {
  const s = await drained(svc.url, productId);
  assert.equal(Number(s.available) + Number(s.sold), s.total, JSON.stringify(s));
  assert.equal(s.sold, s.confirmed);
  assert.equal(await infra.rows(productId), s.confirmed, 'one row per unit sold');
  const rec = await reconcile(productId);
  assert.equal(rec.ok, true, JSON.stringify(rec));
  return s;
}

const markerOf = (productId: string, generation: number, index: number) =>
  infra.client.get(shardKeys(shardStockKey(productId, generation, index)).retired);

describe('an admin that dies between retire and switch', () => {
  it('reshard: the units are in transit, not lost; the next change finishes it first; every unit sells, no more', async () => {
    const P = 'crash-reshard';
    const g = await saleWithSold(P, { stock: 200, shards: 4 }, 30);

    await dies((a) => a.reshard(P, 3));
    // The state the bug left: the list still names the old shards, whose stock keys are gone...
    assert.deepEqual(
      await infra.client.lrange(shardListKey(P), 0, -1),
      [0, 1, 2, 3].map((i) => shardStockKey(P, g, i)),
    );
    assert.equal(await infra.client.exists(...[0, 1, 2, 3].map((i) => shardStockKey(P, g, i))), 0);
    // ...but their numbers are recorded, and the change is journaled.
    const markers = await Promise.all([0, 1, 2, 3].map((i) => markerOf(P, g, i)));
    const recorded = markers.map((m) => JSON.parse(m as string) as { stock: number; sold: number });
    assert.deepEqual(
      recorded.reduce((a, m) => ({ stock: a.stock + m.stock, sold: a.sold + m.sold })),
      { stock: 170, sold: 30 },
    );

    // The status shows the pending change, conserved, with the retired shards' recorded numbers.
    const pending = await status(P);
    assert.equal(pending.generation, g);
    assert.equal((pending.pending as Body).action, 'reshard');
    assert.equal((pending.pending as Body).shards, 3);
    assert.equal(pending.available, 170);
    assert.equal(pending.sold, 30);
    assert.ok((pending.shards as Body[]).every((s) => s.retired === true));
    assert.equal((await reconcile(P)).ok, true);
    // Nothing sells from retired shards meanwhile.
    assert.notEqual((await order(P, 'meanwhile')).status, 202);

    // Another admin process restocks: it finishes the reshard first, then restocks.
    const r = await otherAdmin((a) => a.restock(P, 10));
    assert.equal(r.sale.generation, g + 3, 'the dead admin reserved g+1; the reshard became g+2');
    assert.equal(r.available, 180);
    assert.equal(r.sale.total, 210);
    assert.equal(r.sale.retiredSold, 30, 'sold of the retired shards counted once');
    assert.equal(r.sale.shardKeys.length, 3, 'the restock kept the reshard’s 3 shards');
    const after = await status(P);
    assert.equal(after.pending, null);
    assert.equal(after.available, 180);

    const accepted = await buyAll(P, 'late');
    assert.equal(accepted.length, 180, 'every unit in transit sold, and no more');
    const s = await assertConserved(P);
    assert.equal(s.sold, 210);
    assert.equal(s.available, 0);
    assert.equal(s.total, 210);
    assert.deepEqual(
      await infra.client.keys(`stock:{${P}:${g}:*}:retired`),
      [],
      'markers go once their drained shards are pruned',
    );
  });

  it('the worker finishes an abandoned change by itself, with no admin call: every unit sells, no more', async () => {
    const P = 'crash-auto';
    const g = await saleWithSold(P, { stock: 120, shards: 4 }, 20);
    await dies((a) => a.reshard(P, 2));
    assert.equal(((await status(P)).pending as Body).action, 'reshard');
    const locks = new LockClient(infra.redis.client());
    const loop = startAdminRecovery({
      redis: infra.client,
      admin: new SaleAdmin(infra.redis.client(), locks),
      ageMs: 0,
      intervalMs: 100,
    });
    try {
      await until('the recovery loop to finish the change', async () => (await status(P)).pending === null);
    } finally {
      await loop.close();
      await locks.close();
    }
    const after = await status(P);
    assert.equal(after.generation, g + 2, 'the dead admin reserved g+1; the recovery switched to g+2');
    assert.equal(after.available, 100);
    assert.equal((after.shards as Body[]).length, 2, 'the journaled change: 2 shards');
    assert.equal((await buyAll(P, 'auto')).length, 100, 'every unit in transit sold, and no more');
    const s = await assertConserved(P);
    assert.equal(s.sold, 120);
  });

  it('recover() finishes each kind of change exactly once: restock, reshard, replace, create', async () => {
    const cases: Array<{
      name: string;
      change: (a: SaleAdmin, productId: string) => Promise<unknown>;
      expect: { total: number; available: number; shards: number; perUserLimit: number };
      exists?: false;
    }> = [
      {
        name: 'restock',
        change: (a, p) => a.restock(p, 25),
        expect: { total: 125, available: 115, shards: 2, perUserLimit: 0 },
      },
      {
        name: 'restock-down',
        change: (a, p) => a.restock(p, -40),
        expect: { total: 60, available: 50, shards: 2, perUserLimit: 0 },
      },
      {
        name: 'reshard',
        change: (a, p) => a.reshard(p, 5),
        expect: { total: 100, available: 90, shards: 5, perUserLimit: 0 },
      },
      {
        name: 'replace',
        change: (a, p) => a.put(p, { stock: 40, shards: 3, perUserLimit: 2 }),
        expect: { total: 50, available: 40, shards: 3, perUserLimit: 2 },
      },
      {
        name: 'create',
        change: (a, p) => a.put(p, { stock: 40, shards: 3 }),
        expect: { total: 40, available: 40, shards: 3, perUserLimit: 0 },
        exists: false,
      },
    ];
    for (const c of cases) {
      const P = `crash-recover-${c.name}`;
      if (c.exists !== false) await saleWithSold(P, { stock: 100, shards: 2 }, 10);
      await dies((a) => c.change(a, P));
      const [generation, again] = await otherAdmin(async (a) => [await a.recover(P), await a.recover(P)]);
      assert.ok(generation, `${c.name}: a pending change was finished`);
      assert.equal(again, null, `${c.name}: and only once`);
      const s = await assertConserved(P);
      assert.deepEqual(
        {
          total: s.total,
          available: s.available,
          shards: (s.shards as Body[]).length,
          perUserLimit: s.perUserLimit,
        },
        c.expect,
        c.name,
      );
      assert.equal(s.generation, generation);
      assert.equal(s.pending, null);
    }
  });

  it('orders during the recovery: accepted units never exceed the recorded stock', async () => {
    const P = 'crash-orders';
    await createSale(svc.url, P, { stock: 300, shards: 6 });
    await placeOrders(P, 20, 'before');
    await dies((a) => a.reshard(P, 4));
    // Buyers start while the change is pending and keep going through the recovery until sold out.
    const buying = buyAll(P, 'storm');
    const generation = await otherAdmin((a) => a.recover(P));
    const accepted = await buying;
    assert.equal(accepted.length, 280);
    assert.ok(
      accepted.every((id) => Number(id.split('.')[1]) === generation),
      'sold only from the recovered generation',
    );
    const s = await assertConserved(P);
    assert.equal(s.sold, 300);
    assert.equal(s.available, 0);
  });

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
    const inv = withInventoryScripts(infra.redis.client());
    const adminHold = await locks.acquire(adminLockName(P));
    const keys = [0, 1, 2, 3].map((i) => shardKeys(shardStockKey(P, g, i)));
    await Promise.all(keys.map((k) => locks.acquire(k.lock, { owner: adminHold.owner })));
    assert.ok(
      ((await inv.flashsaleJournal(
        saleKey(P),
        adminLockName(P),
        adminHold.owner,
        g,
        JSON.stringify({ action: 'reshard', shards: 2, since: Date.now() }),
      )) as number) > 0,
    );
    for (const k of keys.slice(0, 2)) {
      assert.equal(
        replyInts(await inv.flashsaleRetireRecorded(k.lock, k.stock, k.sold, k.retired, adminHold.owner))[0],
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
    await otherAdmin((a) => (a as unknown as { pruneRetired(p: string): Promise<void> }).pruneRetired(P));
    assert.equal(await infra.client.exists(...current.map((k) => shardKeys(k).retired)), 2);
    const mid = await status(P);
    assert.deepEqual([mid.available, mid.sold, mid.reserved], [54, 6, 0]);
    assert.ok(await otherAdmin((a) => a.recover(P)));
    const s = await assertConserved(P);
    assert.deepEqual([s.available, s.sold, (s.shards as Body[]).length], [54, 6, 3]);
  });
});
