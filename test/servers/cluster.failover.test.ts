// A master killed with kill -9 under load while its replica takes over: nothing is oversold, and with
// REDIS_WAIT_REPLICAS=1 no acknowledged order is lost (without it, the last ones may be: reported).
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
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

// More buyers than units: the sale sells out, so a unit a failover put back on sale is sold again, and
// a row for its first (lost) reservation would be an oversell.
const STOCK = 1000;
const ORDERS = 1500;

interface Run {
  acked: string[];
  answers: Record<string, number>;
  lost: string[];
  rows: number;
  status: Record<string, unknown>;
}

/** Orders from unique buyers while the master of shard 0 is killed and its replica takes over. */
async function failoverUnderLoad(env: Record<string, string>): Promise<Run> {
  let infra: ClusterInfra | undefined;
  let svc: Service | undefined;
  try {
    infra = await startClusterInfra(NO_LOAD_SHEDDING);
    const cluster = infra.cluster;
    svc = await startService(infra, env);
    const url = svc.url;
    await createSale(url, 'f', { stock: STOCK, shards: 6 });
    const victim = ((await saleStatus(url, 'f')).shards as { master: string }[])[0]?.master as string;
    const acked: string[] = [];
    const answers: Record<string, number> = {};
    let next = 0;
    let killed: Promise<void> | undefined;
    await Promise.all(
      Array.from({ length: 32 }, async () => {
        for (let i = next++; i < ORDERS; i = next++) {
          const r = await placeOrder(
            url,
            { productId: 'f', userId: `u${i}` },
            { 'idempotency-key': `k${i}` },
          );
          const key = `${r.status}${r.body.error ? ` ${r.body.error}` : ''}`;
          answers[key] = (answers[key] ?? 0) + 1;
          if (r.status === 202) acked.push(r.body.orderId as string);
          // Kill while orders are in flight on every shard, once a good part has been accepted.
          if (acked.length >= 300 && !killed) {
            // The replica takes over; then the old master comes back as its replica.
            killed = cluster.failOver(victim);
          }
        }
      }),
    );
    await killed;
    const status = await drained(url, 'f', 60_000);
    const rows = new Set(await rowIds(infra.pool, 'f'));
    return { acked, answers, lost: acked.filter((id) => !rows.has(id)), rows: rows.size, status };
  } finally {
    await svc?.stop();
    await infra?.stop();
  }
}

/** No oversell: Redis' books balance and match Postgres, which never holds more units than were on sale. */
function assertNotOversold(run: Run): void {
  const s = run.status;
  assert.equal(
    Number(s.available) + Number(s.sold),
    s.total,
    `available + sold != total: ${JSON.stringify(s)}`,
  );
  assert.equal(run.rows, Number(s.sold), 'every unit Redis counts as sold has its row, and no other');
  assert.ok(run.rows <= STOCK, `${run.rows} rows for ${STOCK} units`);
  assert.equal(new Set(run.acked).size, run.acked.length, 'no order id answered twice');
}

describe('a master killed (kill -9) under load on a Redis Cluster', () => {
  it('without REDIS_WAIT_REPLICAS: 0 oversold; acknowledged orders lost to the failover are reported', async (t) => {
    const run = await failoverUnderLoad({});
    t.diagnostic(`answers ${JSON.stringify(run.answers)}; lost acknowledged orders: ${run.lost.length}`);
    assertNotOversold(run);
    assert.ok(run.acked.length > 300, 'orders were accepted around the failover');
  });

  it('with REDIS_WAIT_REPLICAS=1: 0 oversold and 0 acknowledged orders lost', async (t) => {
    const run = await failoverUnderLoad({ REDIS_WAIT_REPLICAS: '1', REDIS_WAIT_TIMEOUT_MS: '1000' });
    t.diagnostic(`answers ${JSON.stringify(run.answers)}; lost acknowledged orders: ${run.lost.length}`);
    assertNotOversold(run);
    assert.deepEqual(run.lost, [], 'every 202 has its row');
    assert.ok(run.acked.length > 300);
  });
});
