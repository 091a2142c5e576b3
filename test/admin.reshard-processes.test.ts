// Several API processes while resharding: orders through both are conserved, and each process learns a
// new generation by pub/sub or, failing that, by the retired answer.
import assert from 'node:assert/strict';
import { after, before, describe, it, type TestContext } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { LockClient } from '@flashsale/lock';
import { until } from '../harness/async.ts';
import {
  acceptedIds,
  assertConserved,
  assertOnlyExpectedStatuses,
  counter,
  generationOf,
  order,
  RESHARD_ENV,
  reconcile,
  reshard,
  storm,
  tally,
} from '../harness/reshard.ts';
import { call, createSale, drained, type Spawned, spawnService } from '../harness/service.ts';
import { SaleAdmin } from '../src/inventory/admin.ts';
import { useService } from './support/suite.ts';

const { infra } = useService();

describe('several API processes', () => {
  let api1: Spawned;
  let api2: Spawned;
  let worker: Spawned;
  before(async () => {
    // The 429s counted below must be the reshard's, not a loaded machine's.
    [api1, api2, worker] = await Promise.all([
      spawnService(infra, 'api', RESHARD_ENV),
      spawnService(infra, 'api', RESHARD_ENV),
      spawnService(infra, 'worker'),
    ]);
  });
  after(async () => {
    await Promise.all([api1?.stop(), api2?.stop(), worker?.stop()]);
  });

  it('orders through two API processes while both reshard: conserved, both follow every generation', async (t: TestContext) => {
    const P = 'multi-api';
    await createSale(api1.url, P, { stock: 3000, shards: 8 });
    let adminsDone = false;
    const windows: Array<{ from: number; to: number; shards: number }> = [];
    const admins = (async () => {
      const log: number[] = [];
      for (const [i, shards] of [4, 12, 1, 16, 6, 2, 9, 5].entries()) {
        await sleep(30); // pacing: the changes are spread over the storm (the load is what is tested)
        // Mostly through api1; every third change through api2, racing api1's next one.
        const url = i % 3 === 2 ? api2.url : api1.url;
        const from = Date.now();
        const changes = await Promise.all([
          reshard(url, P, shards),
          ...(i % 3 === 2 ? [reshard(api1.url, P, shards + 1)] : []),
        ]);
        windows.push({ from, to: Date.now(), shards: Number(changes.at(-1)?.body.shards) });
        for (const c of changes) {
          assert.equal(c.status, 200, JSON.stringify(c.body));
          log.push(Number(c.body.generation));
        }
      }
      return log;
    })().finally(() => {
      adminsDone = true;
    });
    // At least 2,000 orders, and on until the admins are done (staying below the 3,000 units).
    const { outcomes, ms } = await storm({
      urls: [api1.url, api2.url],
      productId: P,
      inFlight: 150,
      minOrders: 2000,
      maxOrders: 2900,
      until: () => adminsDone,
    });
    const gens = await admins;
    assertOnlyExpectedStatuses(outcomes);
    assert.equal(tally(outcomes)['409 sold_out'], undefined, 'stock was left all along: nobody is refused');
    const accepted = acceptedIds(outcomes);
    const s = await assertConserved(infra.pool, api1.url, P, accepted);
    assert.equal(s.total, 3000);
    assert.equal(s.available, 3000 - accepted.length);
    // Where the 429s fell: during an admin change, or while N shards were current.
    const busyOnes = outcomes.filter((o) => o.status === 429);
    const where: Record<string, number> = {};
    for (const o of busyOnes) {
      const during = windows.some((w) => o.startedAt <= w.to && o.finishedAt >= w.from);
      const current = windows.filter((w) => w.to <= o.startedAt).at(-1)?.shards ?? 8;
      const k = during ? 'during a change' : `${current} shards`;
      where[k] = (where[k] ?? 0) + 1;
    }
    t.diagnostic(
      `two API processes: ${outcomes.length} orders in ${Math.round(ms)} ms (${Math.round(outcomes.length / (ms / 1000))}/s), ` +
        `${windows.length} admin rounds; answers ${JSON.stringify(tally(outcomes))}; 429 by moment ${JSON.stringify(where)}`,
    );
    const busy = busyOnes.length;
    assert.ok(busy < outcomes.length * 0.05, `too many 429: ${busy} of ${outcomes.length}`);
    // Both processes took orders in several generations.
    for (const url of [api1.url, api2.url]) {
      const seen = new Set(
        outcomes.filter((o) => o.url === url && o.orderId).map((o) => generationOf(o.orderId)),
      );
      assert.ok(seen.size >= 3, `${url} only ordered in generations ${[...seen]}`);
    }
    // After the storm both processes order in the newest generation.
    for (const url of [api1.url, api2.url]) {
      const r = await order(url, P, `after-${url === api1.url ? 1 : 2}`);
      assert.equal(r.status, 202);
      assert.equal(generationOf(r.body.orderId), s.generation);
    }
    assert.equal(gens.length, 10);
  });

  it('the other process learns a new generation by pub/sub: no retired answer needed', async () => {
    const P = 'pubsub-learn';
    await createSale(api1.url, P, { stock: 100, shards: 2 });
    // Warm api2's cache for P.
    assert.equal((await order(api2.url, P, 'warm')).status, 202);
    const retired0 = await counter(api2.url, 'flashsale_shard_attempts_total', 'outcome="retired"');
    const r = await reshard(api1.url, P, 5);
    assert.equal(r.status, 200);
    // api2's product view reads through its cached sale: the retired shards (their stock keys gone)
    // show 0 until the reshard's event has dropped that cache, then the 99 units of the new generation.
    await until(
      "the reshard's event reached api2",
      async () => (await call(api2.url, 'GET', `/api/products/${P}`)).body.available === 99,
    );
    const o = await order(api2.url, P, 'next');
    assert.equal(o.status, 202);
    assert.equal(generationOf(o.body.orderId), r.body.generation);
    assert.equal(await counter(api2.url, 'flashsale_shard_attempts_total', 'outcome="retired"'), retired0);
  });

  it('without the event (pub/sub lost), the retired answer brings both processes to the new generation', async () => {
    const P = 'no-event';
    await createSale(api1.url, P, { stock: 100, shards: 3 });
    assert.equal((await order(api1.url, P, 'w1')).status, 202);
    assert.equal((await order(api2.url, P, 'w2')).status, 202);
    const before = await Promise.all(
      [api1, api2].map((a) => counter(a.url, 'flashsale_shard_attempts_total', 'outcome="retired"')),
    );
    // An admin whose announcements go nowhere: the API processes keep their cached shard lists.
    const silent = infra.redis.client();
    Object.assign(silent, { publish: async () => 0 });
    const lockRedis = infra.redis.client();
    const locks = new LockClient(lockRedis);
    try {
      const r = await new SaleAdmin(silent, locks).reshard(P, 4);
      for (const [k, a] of [api1, api2].entries()) {
        const o = await order(a.url, P, `after${k}`);
        assert.equal(o.status, 202, JSON.stringify(o.body));
        assert.equal(generationOf(o.body.orderId), r.sale.generation);
        const retired = await counter(a.url, 'flashsale_shard_attempts_total', 'outcome="retired"');
        assert.ok(retired > (before[k] ?? 0), 'learned by the retired answer');
      }
    } finally {
      await locks.close();
    }
    const s = await drained(api1.url, P);
    assert.equal(s.available, 96);
    assert.equal((await reconcile(api1.url, P)).body.ok, true);
  });
});
