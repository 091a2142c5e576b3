// An admin that dies between retiring a sale's shards and switching to the new generation (DESIGN.md
// §5, invariants 1–3): the units it took are in transit, not lost, and recovery finishes every change.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { LockClient } from '@flashsale/lock';
import { until } from '../harness/async.ts';
import { createSale } from '../harness/service.ts';
import { SaleAdmin } from '../src/inventory/admin.ts';
import { shardListKey, shardStockKey } from '../src/inventory/keys.ts';
import { startAdminRecovery } from '../src/inventory/recovery.ts';
import { type Body, crashKit } from './support/admin-crash.ts';
import { useService } from './support/suite.ts';

// The service's own worker would finish abandoned changes after SWEEP_AGE_MS; these tests look at
// the pending state first, so its recovery waits (the last test runs the recovery loop itself).
const { infra, svc } = useService({ SWEEP_AGE_MS: '600000' });
const {
  status,
  reconcile,
  order,
  otherAdmin,
  dies,
  buyAll,
  placeOrders,
  saleWithSold,
  assertConserved,
  markerOf,
} = crashKit(infra, svc);

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
      expect: { total: number; available: number; shards: number; perUserLimit: number | null };
      exists?: false;
    }> = [
      {
        name: 'restock',
        change: (a, p) => a.restock(p, 25),
        expect: { total: 125, available: 115, shards: 2, perUserLimit: null },
      },
      {
        name: 'restock-down',
        change: (a, p) => a.restock(p, -40),
        expect: { total: 60, available: 50, shards: 2, perUserLimit: null },
      },
      {
        name: 'reshard',
        change: (a, p) => a.reshard(p, 5),
        expect: { total: 100, available: 90, shards: 5, perUserLimit: null },
      },
      {
        name: 'replace',
        change: (a, p) => a.put(p, { stock: 40, shards: 3, perUserLimit: 2 }),
        expect: { total: 50, available: 40, shards: 3, perUserLimit: 2 },
      },
      {
        name: 'create',
        change: (a, p) => a.put(p, { stock: 40, shards: 3 }),
        expect: { total: 40, available: 40, shards: 3, perUserLimit: null },
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
});
