// The failover of issue #26, measured: a 3+3 Redis Cluster with REDIS_WAIT_REPLICAS=1, 5,000 orders for
// 3,000 units (12 shards) from 100 clients, one master killed (kill -9) for good after 600 answers.
// Prints, per run, the answers by status and code and the Postgres rows no 202 (or settled unknown) stands behind.
import { failoverUnderLoad } from '../harness/failover-truth.ts';
import { startClusterInfra } from '../harness/redis-cluster.ts';
import { createSale, NO_LOAD_SHEDDING, startService } from '../harness/service.ts';

const RUNS = Number(process.env.RUNS ?? 3);
const STOCK = 3000;

async function once(run: number): Promise<Record<string, unknown>> {
  const infra = await startClusterInfra(NO_LOAD_SHEDDING);
  const svc = await startService(infra, { REDIS_WAIT_REPLICAS: '1' });
  try {
    await createSale(svc.url, 'f', { stock: STOCK, shards: 12 });
    const r = await failoverUnderLoad(infra, svc.url, {
      productId: 'f',
      stock: STOCK,
      shards: 12,
      orders: 5000,
      clients: 100,
      killAfter: 600,
    });
    const settledAsOrder = r.unknown.filter((u) => u.settled === 200).map((u) => u.orderId);
    const real = new Set([...r.acked, ...settledAsOrder]);
    const count = (match: (k: string) => boolean) =>
      Object.entries(r.answers).reduce((n, [k, v]) => n + (match(k) ? v : 0), 0);
    return {
      run,
      '202': count((k) => k === '202'),
      '409': count((k) => k.startsWith('409')),
      '503 unavailable': count((k) => k.startsWith('503 unavailable')),
      '503 unavailable withdrawn': count((k) => k === '503 unavailable withdrawn'),
      '503 unavailable stranded': count((k) => k === '503 unavailable stranded'),
      '503 outcome_unknown': count((k) => k === '503 outcome_unknown'),
      '5xx other': count((k) => k.startsWith('5') && !k.startsWith('503')),
      other: count((k) => !/^(202|409|5)/.test(k)),
      rows: r.rows.size,
      rowsBehindRefusals: [...r.rows].filter((id) => !real.has(id)).length,
      ackedWithoutRow: r.acked.filter((id) => !r.rows.has(id)).length,
      unknownSlowestSettleMs: Math.round(Math.max(0, ...r.unknown.map((u) => u.ms))),
      ackedAfterFailover: r.ackedAfterFailover,
      available: r.status.available,
      answers: r.answers,
    };
  } finally {
    await svc.stop();
    await infra.stop();
  }
}

for (let run = 1; run <= RUNS; run++) console.log(JSON.stringify(await once(run)));
