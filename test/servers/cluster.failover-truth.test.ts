// A master killed (kill -9) under load with REDIS_WAIT_REPLICAS=1, its replica promoted with none of
// its own: no refusal becomes an order, every outcome_unknown settles, the other masters keep selling,
// the stranded units answer 503 unavailable (not sold_out) and sell again once a replica is added.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { until } from '../../harness/async.ts';
import { failoverUnderLoad, type TruthRun } from '../../harness/failover-truth.ts';
import { type ClusterInfra, startClusterInfra } from '../../harness/redis-cluster.ts';
import { rowIds, saleStatus } from '../../harness/reshard.ts';
import {
  createSale,
  drained,
  NO_LOAD_SHEDDING,
  placeOrder,
  type Service,
  startService,
} from '../../harness/service.ts';
import { addReplica } from '../support/cluster-replica.ts';

const STOCK = 1000;

/** A gauge's value from /metrics. */
async function gauge(url: string, name: string): Promise<number> {
  const text = await (await fetch(`${url}/metrics`)).text();
  const line = text.split('\n').find((l) => l.startsWith(`${name} `));
  return Number(line?.split(' ')[1]);
}

/** Every answer was the truth: 202 ⇔ a row; no row behind a refusal; every unknown settled, once. */
function assertTruthful(run: TruthRun): void {
  const statuses = Object.keys(run.answers);
  assert.deepEqual(
    statuses.filter((k) => k.startsWith('5') && !/^503 (unavailable|outcome_unknown)/.test(k)),
    [],
    'no 500',
  );
  assert.deepEqual(
    run.acked.filter((id) => !run.rows.has(id)),
    [],
    'every 202 has its row',
  );
  const real = new Set([...run.acked, ...run.unknown.filter((u) => u.settled === 200).map((u) => u.orderId)]);
  assert.deepEqual(
    [...run.rows].filter((id) => !real.has(id)),
    [],
    'no row behind a refusal (4xx or 503 unavailable)',
  );
  assert.deepEqual(
    run.refusedIds.filter((id) => run.rows.has(id)),
    [],
    'no withdrawn order became a row',
  );
  assert.deepEqual(
    run.unknown.filter((u) => u.settled === 404 && run.rows.has(u.orderId)),
    [],
    'an unknown settled as none stays none',
  );
  const s = run.status;
  assert.equal(
    Number(s.available) + Number(s.sold),
    s.total,
    `available + sold != total: ${JSON.stringify(s)}`,
  );
  assert.equal(run.rows.size, Number(s.sold), 'every unit sold has its row');
  assert.ok(run.rows.size <= STOCK, `${run.rows.size} rows for ${STOCK} units`);
}

describe('a master killed under load with REDIS_WAIT_REPLICAS=1, its promoted replica left without one', () => {
  it('answers only the truth, keeps selling elsewhere, and sells the stranded units once a replica is added', async (t) => {
    let infra: ClusterInfra | undefined;
    let svc: Service | undefined;
    try {
      infra = await startClusterInfra(NO_LOAD_SHEDDING);
      // Errors logged: an unexpected 500 shows its cause in the test's output.
      svc = await startService(infra, {
        REDIS_WAIT_REPLICAS: '1',
        REDIS_WAIT_TIMEOUT_MS: '500',
        LOG_LEVEL: 'error',
      });
      const url = svc.url;
      await createSale(url, 't', { stock: STOCK, shards: 12 });
      const run = await failoverUnderLoad(infra, url, {
        productId: 't',
        stock: STOCK,
        shards: 12,
        orders: 1500,
        clients: 32,
        killAfter: 450,
      });
      const slowest = Math.max(0, ...run.unknown.map((u) => u.ms));
      t.diagnostic(
        `answers ${JSON.stringify(run.answers)}; rows ${run.rows.size}; unknown ${run.unknown.length} (slowest settled in ${Math.round(slowest)} ms); 202 after the failover ${run.ackedAfterFailover}`,
      );
      assertTruthful(run);
      assert.ok(run.ackedAfterFailover > 0, 'the surviving masters kept selling after the failover');
      // A retry with the same key answers what GET settled.
      for (const u of run.unknown) {
        const again = await placeOrder(
          url,
          { productId: 't', userId: u.userId },
          { 'idempotency-key': u.key },
        );
        if (u.settled === 200) assert.equal(again.body.orderId, u.orderId, 'the key answers that order');
        else assert.notEqual(again.body.orderId, u.orderId);
      }
      // What is left sits on the promoted master's shards: 503 unavailable, not sold_out.
      const left = Number((await saleStatus(url, 't')).available);
      assert.ok(left > 0, 'units stranded on the promoted master');
      const stranded = await placeOrder(url, { productId: 't', userId: 'late' });
      assert.deepEqual(
        [stranded.status, stranded.body.error],
        [503, 'unavailable'],
        JSON.stringify(stranded.body),
      );
      assert.equal(await gauge(url, 'flashsale_redis_masters_short_of_replicas'), 1);
      assert.ok((await gauge(url, 'flashsale_units_stranded')) > 0);
      // An operator adds a replica: the stranded units sell, with nothing else done.
      await addReplica(infra.cluster, run.promoted);
      await until('the stranded units selling again', async () => {
        const r = await placeOrder(url, { productId: 't', userId: 'again' }, { 'idempotency-key': 'again' });
        return r.status === 202;
      });
      for (let i = 0; ; i++) {
        const r = await placeOrder(url, { productId: 't', userId: `after${i}` });
        if (r.status === 409) break;
        assert.equal(r.status, 202, JSON.stringify(r.body));
      }
      const status = await drained(url, 't', 120_000);
      assert.deepEqual([status.available, status.sold], [0, STOCK]);
      assert.equal((await rowIds(infra.pool, 't')).length, STOCK);
      assert.equal(await gauge(url, 'flashsale_redis_masters_short_of_replicas'), 0);
    } finally {
      await svc?.stop();
      await infra?.stop();
    }
  });
});
