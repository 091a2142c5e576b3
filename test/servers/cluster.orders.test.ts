// The order path on a real Redis Cluster (3 masters + 3 replicas): shards placed on every master, the
// 2,000-orders-for-500-units storm, a live reshard under load, the writer draining every queue, and
// pay or expire (its scripts in the product's slot, units back through a new generation).
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import calculateSlot from 'cluster-key-slot';
import { until } from '../../harness/async.ts';
import { type ClusterInfra, startClusterInfra } from '../../harness/redis-cluster.ts';
import {
  acceptedIds,
  assertConserved,
  assertOnlyExpectedStatuses,
  reshard,
  saleStatus,
  storm,
  tally,
} from '../../harness/reshard.ts';
import {
  call,
  createSale,
  NO_LOAD_SHEDDING,
  placeOrder,
  type Service,
  startService,
} from '../../harness/service.ts';
import { closeBull, createOrderQueue, registeredQueues } from '../../src/orders/queue.ts';
import { masterOf } from '../../src/redis/connection.ts';
import { cancel, pay, rowUnits, settled } from '../support/lifecycle.ts';

describe('orders on a Redis Cluster', () => {
  let infra: ClusterInfra;
  let svc: Service;
  before(async () => {
    infra = await startClusterInfra(NO_LOAD_SHEDDING);
    svc = await startService(infra);
  });
  after(async () => {
    await svc?.stop();
    await infra?.stop();
  });

  it('places a sale’s shards evenly on the 3 masters, and admin status names each one’s master', async () => {
    await createSale(svc.url, 'spread', { stock: 90, shards: 6 });
    const status = await saleStatus(svc.url, 'spread');
    const shards = status.shards as { key: string; master: string }[];
    const masters = await infra.cluster.masters();
    assert.equal(masters.length, 3);
    const perMaster = new Map(masters.map((m) => [m, 0]));
    for (const s of shards) {
      assert.equal(s.master, masterOf(infra.client, s.key), `${s.key} is served by the master status names`);
      perMaster.set(s.master, (perMaster.get(s.master) ?? 0) + 1);
    }
    assert.deepEqual([...perMaster.values()], [2, 2, 2], JSON.stringify(shards));
  });

  it('2,000 orders for 500 units over HTTP: exactly 500 accepted, all persisted, every queue drained', async () => {
    await createSale(svc.url, 'storm', { stock: 500, shards: 6 });
    const masters = new Set(
      ((await saleStatus(svc.url, 'storm')).shards as { master: string }[]).map((s) => s.master),
    );
    assert.equal(masters.size, 3, 'shards on all 3 masters');
    const accepted: string[] = [];
    const answers: Record<string, number> = {};
    let next = 0;
    await Promise.all(
      Array.from({ length: 64 }, async () => {
        for (let i = next++; i < 2000; i = next++) {
          const r = await placeOrder(svc.url, { productId: 'storm', userId: `u${i}` });
          const key = `${r.status}${r.body.error ? ` ${r.body.error}` : ''}`;
          answers[key] = (answers[key] ?? 0) + 1;
          if (r.status === 202) accepted.push(r.body.orderId as string);
        }
      }),
    );
    assert.deepEqual(answers, { '202': 500, '409 sold_out': 1500 });
    await assertConserved(infra.pool, svc.url, 'storm', accepted);

    // One queue per master, and the writer consumed them all.
    const prefixes = await registeredQueues(infra.client);
    assert.equal(prefixes.length, 3);
    assert.equal(new Set(prefixes.map((p) => masterOf(infra.client, p))).size, 3, 'queues on 3 masters');
    for (const prefix of prefixes) {
      const queue = createOrderQueue({ nodes: infra.cluster.nodeList }, prefix);
      try {
        const counts = await queue.getJobCounts('waiting', 'active', 'delayed', 'failed', 'completed');
        const open = ['waiting', 'active', 'delayed', 'failed'].reduce(
          (n, state) => n + (counts[state] ?? 0),
          0,
        );
        assert.equal(open, 0, `${prefix}: ${JSON.stringify(counts)}`);
        assert.ok(
          (counts.completed ?? 0) > 0,
          `${prefix} carried part of the hand-off: ${JSON.stringify(counts)}`,
        );
      } finally {
        await closeBull(queue);
      }
    }
  });

  it('a live reshard under load on the cluster: orders keep flowing, nothing oversold or lost', async () => {
    await createSale(svc.url, 'live', { stock: 1200, shards: 3 });
    const progress = { sent: 0, outcomes: [] as Parameters<typeof tally>[0] };
    const load = storm({ urls: [svc.url], productId: 'live', inFlight: 32, minOrders: 1500, progress });
    for (const shards of [6, 2, 9]) {
      const sent = progress.sent;
      // Each change lands while orders are in flight: wait for some orders since the last one.
      while (progress.sent < sent + 150 && progress.sent < 1400) await new Promise((r) => setImmediate(r));
      const r = await reshard(svc.url, 'live', shards);
      assert.equal(r.status, 200, JSON.stringify(r.body));
    }
    const { outcomes } = await load;
    assertOnlyExpectedStatuses(outcomes);
    const accepted = acceptedIds(outcomes);
    assert.ok(
      accepted.length <= 1200,
      `accepted ${accepted.length} of 1200: ${JSON.stringify(tally(outcomes))}`,
    );
    const s = await assertConserved(infra.pool, svc.url, 'live', accepted);
    const masters = new Set((s.shards as { master: string }[]).map((x) => x.master));
    assert.equal(masters.size, 3, 'the last generation (9 shards) is spread over all masters too');
  });

  it('pay, cancel or expire on the cluster: one fate each, returned units sell again, every unit ends paid', async () => {
    const P = 'waves';
    await createSale(svc.url, P, { stock: 60, shards: 6, paymentTimeoutSec: 1 });
    // Buyers come in waves; in each, every other accepted buyer pays at once, a quarter cancel and the
    // rest walk away. Their units come back by cancel or expiry (a new generation, spread over the
    // masters again) and the next wave buys them, until every unit is paid.
    let buyer = 0;
    let paid = 0;
    let cancelled = 0;
    let abandoned = 0;
    while (paid < 60) {
      assert.ok(buyer < 2000, `60 units still not all paid after ${buyer} buyers (${paid} paid)`);
      const userId = `w${buyer}`;
      const r = await placeOrder(svc.url, { productId: P, userId });
      if (r.status === 202) {
        const id = r.body.orderId as string;
        if (buyer % 2 === 0) {
          const p = await pay(svc.url, id, userId);
          if (p.status === 200) paid += 1;
          else assert.equal(p.body.error, 'order_expired', JSON.stringify(p.body));
        } else if (buyer % 4 === 1) {
          const c = await cancel(svc.url, id, userId);
          if (c.status === 200) cancelled += 1;
          else assert.equal(c.body.error, 'order_expired', JSON.stringify(c.body));
        } else abandoned += 1;
      } else {
        assert.equal(r.body.error, 'sold_out', JSON.stringify(r.body));
        // Sold out for now: wait for returned units to be on sale again.
        await until('units back on sale', async () => {
          const view = await call(svc.url, 'GET', `/api/products/${P}`);
          return view.body.available !== 0 || paid >= 60;
        });
      }
      buyer += 1;
    }
    assert.ok(
      abandoned > 0 && cancelled > 0,
      `some orders abandoned (${abandoned}), some cancelled (${cancelled})`,
    );
    const status = await settled(svc.url, infra.client, P);
    assert.equal(status.available, 0);
    assert.equal(status.paid, 60);
    const units = await rowUnits(infra.pool, P);
    assert.equal(units.paid, 60, JSON.stringify(units));
    assert.equal(units.cancelled, cancelled, JSON.stringify(units));
    // Expired: the walked-away, and any payer or canceller who came too late (answered order_expired).
    const expired = units.expired ?? 0;
    assert.ok(expired >= abandoned, JSON.stringify(units));
    assert.equal(status.returned, cancelled + expired, JSON.stringify(status));
    const masters = new Set((status.shards as { master: string }[]).map((x) => x.master));
    assert.equal(masters.size, 3, 'the last generation is spread over all masters');
  });

  // Slot migrations last: they move many slots, and the tests above need none moved.
  it('a product whose sale slot moved before any process saw it: orders are answered, units back from expiry sell again', async () => {
    // The service's subscriber sends nothing but SSUBSCRIBE, so nothing tells it the slot moved: its
    // first subscription goes to the old master, which never answers it.
    const P = 'moved-first';
    const slot = calculateSlot(`sale:{${P}}`);
    const owner = await infra.cluster.slotOwner(slot);
    const to = (await infra.cluster.masters()).find((m) => m !== owner) as string;
    await infra.cluster.migrateSlot(slot, to);
    await createSale(svc.url, P, { stock: 2, shards: 2, paymentTimeoutSec: 1 });
    for (const u of ['m1', 'm2'])
      assert.equal((await placeOrder(svc.url, { productId: P, userId: u })).status, 202);
    assert.equal((await placeOrder(svc.url, { productId: P, userId: 'm3' })).body.error, 'sold_out');
    // Expiry returns both units; the return's event reaches the catalog, which sells them again.
    const again = await until('a unit sold again after expiry', async () => {
      const r = await placeOrder(svc.url, { productId: P, userId: 'm4' });
      if (r.status === 202) return r;
      assert.equal(r.body.error, 'sold_out', JSON.stringify(r.body));
      return undefined;
    });
    assert.equal((await pay(svc.url, again.body.orderId as string, 'm4')).status, 200);
  });

  it('a shard’s slot migrated with redis-cli --cluster reshard under load: no order refused (busy ones placed on retry), the shard now on its new master', async () => {
    await createSale(svc.url, 'moving', { stock: 5000, shards: 3 });
    const before = (await saleStatus(svc.url, 'moving')).shards as { key: string; master: string }[];
    const moved = before[0] as { key: string; master: string };
    const to = (await infra.cluster.masters()).find((m) => m !== moved.master) as string;
    const slot = calculateSlot(moved.key);
    let migrated = false;
    const progress = { sent: 0, outcomes: [] as Parameters<typeof tally>[0] };
    // Orders keep coming until the migration is over (well under the stock: every one must be placed).
    const load = storm({
      urls: [svc.url],
      productId: 'moving',
      inFlight: 16,
      minOrders: 200,
      maxOrders: 4000,
      until: () => migrated,
      progress,
    });
    while (progress.sent < 100) await new Promise((r) => setImmediate(r));
    await infra.cluster.migrateSlot(slot, to);
    migrated = true;
    const { outcomes } = await load;
    assert.ok(outcomes.length < 4000, 'the migration ended while orders were still coming');
    // No order refused: each is placed, or (a busy machine, the slot's keys half moved) answered
    // 429 busy, which changes nothing and asks the buyer to come back; coming back, each is placed.
    const t = tally(outcomes);
    assert.deepEqual(
      Object.keys(t).filter((k) => k !== '202' && k !== '429 busy'),
      [],
      `every order placed or asked to retry: ${JSON.stringify(t)}`,
    );
    const accepted = acceptedIds(outcomes);
    const busy = outcomes.filter((x) => x.status === 429).length;
    for (let k = 0; k < busy; k++) {
      const r = await until(`busy buyer ${k} placed on retry`, async () => {
        const again = await placeOrder(svc.url, { productId: 'moving', userId: `busy-${k}` });
        return again.status === 202 ? again : undefined;
      });
      accepted.push(r.body.orderId as string);
    }
    const s = await assertConserved(infra.pool, svc.url, 'moving', accepted);
    const after = (s.shards as { key: string; master: string }[]).find((x) => x.key === moved.key);
    assert.equal(after?.master, to, 'admin status follows the shard to its new master');
    assert.equal(await infra.cluster.slotOwner(slot), to, 'the cluster serves the slot from there');
  });
});
