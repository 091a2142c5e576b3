// Orders under load on a Redis Cluster while one master is killed (kill -9) and its replica takes over
// with no replica of its own: every answer recorded, each outcome_unknown settled by GET, rows matched.
import { performance } from 'node:perf_hooks';
import { until } from './async.ts';
import type { ClusterInfra } from './redis-cluster.ts';
import { rowIds, saleStatus } from './reshard.ts';
import { call, drained, placeOrder } from './service.ts';

export interface TruthOptions {
  productId: string;
  stock: number;
  shards: number;
  orders: number;
  clients: number;
  /** The master is killed once this many answers are in. */
  killAfter: number;
}

export interface TruthRun {
  /** Answers by `status error[ withdrawn|stranded]`. */
  answers: Record<string, number>;
  acked: string[];
  /** Order ids named by answers that are not 202 and not outcome_unknown (e.g. a withdrawn order's). */
  refusedIds: string[];
  /** Each outcome_unknown, settled by GET: its order id, the status GET settled on, how long it took. */
  unknown: Unknown[];
  rows: Set<string>;
  status: Record<string, unknown>;
  /** 202s answered after the failover had completed. */
  ackedAfterFailover: number;
  /** The killed master and the replica that took over from it. */
  victim: string;
  promoted: string;
}

/** An outcome_unknown answer (its buyer and key, to retry) and how GET settled it. */
export interface Unknown {
  orderId: string;
  userId: string;
  key: string;
  settled: number;
  ms: number;
}

/** Shard masters as the admin status shows them. */
const shardMasters = async (url: string, productId: string) =>
  ((await saleStatus(url, productId)).shards as { master: string }[]).map((s) => s.master);

/** GET /api/orders/:id until it answers 200 or 404 (not 503): the settled truth. */
async function settle(url: string, orderId: string, userId: string, key: string): Promise<Unknown> {
  const started = performance.now();
  const r = await until(
    `GET ${orderId} settled`,
    async () => {
      const got = await call(url, 'GET', `/api/orders/${orderId}`);
      return got.status === 200 || got.status === 404 ? got : undefined;
    },
    { timeoutMs: 60_000, everyMs: 100 },
  );
  return { orderId, userId, key, settled: r.status, ms: performance.now() - started };
}

/** Unique buyers with Idempotency-Keys; the master of shard 0 is killed for good once killAfter answers are in. */
export async function failoverUnderLoad(
  infra: ClusterInfra,
  url: string,
  o: TruthOptions,
): Promise<TruthRun> {
  const victim = (await shardMasters(url, o.productId))[0] as string;
  const answers: Record<string, number> = {};
  const acked: string[] = [];
  const refusedIds: string[] = [];
  const settling: Promise<Unknown>[] = [];
  let killed: Promise<void> | undefined;
  let failedOver = false;
  let ackedAfterFailover = 0;
  let next = 0;
  let answered = 0;
  await Promise.all(
    Array.from({ length: o.clients }, async () => {
      for (let i = next++; i < o.orders; i = next++) {
        const r = await placeOrder(
          url,
          { productId: o.productId, userId: `u${i}` },
          { 'idempotency-key': `k${i}` },
        );
        // A 503 unavailable says why: a reservation withdrawn, or the stock left stranded.
        const why = r.body.withdrawnOrderId ? ' withdrawn' : r.body.stranded ? ' stranded' : '';
        const key = `${r.status}${r.body.error ? ` ${r.body.error}` : ''}${why}`;
        answers[key] = (answers[key] ?? 0) + 1;
        const id = (r.body.orderId ?? r.body.withdrawnOrderId) as string | undefined;
        if (r.status === 202) {
          acked.push(r.body.orderId as string);
          if (failedOver) ackedAfterFailover += 1;
        } else if (r.body.error === 'outcome_unknown')
          settling.push(settle(url, String(id), `u${i}`, `k${i}`));
        else if (id) refusedIds.push(id);
        if (++answered >= o.killAfter && !killed) {
          killed = infra.cluster.failOver(victim, false).then(() => {
            failedOver = true;
          });
        }
      }
    }),
  );
  await killed;
  const unknown = await Promise.all(settling);
  const status = await drained(url, o.productId, 120_000);
  const rows = new Set(await rowIds(infra.pool, o.productId));
  // Shard 0's slot is served by the replica that took over from the victim.
  const promoted = (await shardMasters(url, o.productId))[0] as string;
  return {
    answers,
    acked,
    refusedIds,
    unknown,
    rows,
    status,
    ackedAfterFailover,
    victim,
    promoted,
  };
}
