// Scenario 1b: kill -9 the API while its batches are forming. The API holds accepted orders up to 1 s
// (HANDOFF_MAX_WAIT_MS) before their batch job is added, so each kill strands reserved orders that
// reached no job; the sweeper must deliver every one of them exactly once.

import { until } from '../../harness/async.ts';
import { scanReservations } from '../../src/inventory/reservations.ts';
import type { OrderRecord } from '../../src/orders/order.ts';
import { createOrderQueue, isOrderBatch } from '../../src/orders/queue.ts';
import {
  check,
  emptyResult,
  killApiDuring,
  Load,
  log,
  orderRows,
  retryUnanswered,
  type ScenarioResult,
  spreadPoints,
  startSale,
  unitOrder,
  verifyOrders,
  withFaultInfra,
} from './lib.ts';

const STOCK = 1200;
const ORDERS = 1500;
const KILLS = 3;
/** Batches form for up to a second (and up to 1,000 orders), so a kill always finds some forming. */
const FORMING = { HANDOFF_MAX_WAIT_MS: '1000', HANDOFF_MAX_BATCH: '1000' };

export async function handOffKill(): Promise<ScenarioResult> {
  const result = emptyResult('1b', 'API kill -9 ×3 while batches form');
  return withFaultInfra(result, {}, async (infra, procs) => {
    const sale = await startSale(infra, procs, 's1b', { stock: STOCK, shards: 8 }, { api: FORMING });
    const { targets, productId } = sale;
    const queue = createOrderQueue(infra.env.REDIS_URL as string);
    queue.on('error', () => {});
    const load = new Load({
      targets,
      productId,
      orders: ORDERS,
      concurrency: 64,
      order: unitOrder(productId),
    });
    const stranded: number[] = [];
    try {
      await Promise.all([
        load.done,
        killApiDuring({
          infra,
          procs,
          targets,
          load,
          api: sale.api,
          env: FORMING,
          points: spreadPoints(KILLS, ORDERS * 0.1, ORDERS * 0.8),
          // Kill while some accepted orders wait for their batch (answers come a batch at a time,
          // so the moment a count is reached is often just after a flush).
          beforeKill: async () => {
            await until(
              'reserved orders in no job',
              async () => (await strandedOrders(infra.client, queue, productId)) > 0,
            );
          },
          afterKill: async () => {
            stranded.push(await strandedOrders(infra.client, queue, productId));
            log(
              '1b',
              `killed the API after ${load.dispatched} orders; ${stranded.at(-1)} reserved orders in no job`,
            );
          },
        }),
      ]);
    } finally {
      await queue.close();
    }
    const { retried } = await retryUnanswered(targets, productId, load.logs, 1);
    result.faults = `${stranded.length} API kills with ${stranded.join('/')} reserved orders in no job, ${retried} retries with the same key`;
    result.details.strandedPerKill = stranded;
    check(
      result,
      stranded.some((n) => n > 0),
      'no kill found an order between its reservation and its job',
    );
    await verifyOrders(result, infra, targets, load.logs, { productId, total: STOCK, oneOrderPerUser: true });
    result.details.rows = (await orderRows(infra.pool, productId)).length;
  });
}

/** Reserved orders of the product that no job of the queue carries (yet): only the sweeper can send them. */
async function strandedOrders(
  redis: Parameters<typeof scanReservations>[0],
  queue: ReturnType<typeof createOrderQueue>,
  productId: string,
): Promise<number> {
  const reserved = new Set<string>();
  for await (const hash of scanReservations(redis)) {
    for (const id of Object.keys(hash.entries)) if (id.startsWith(`${productId}.`)) reserved.add(id);
  }
  const jobs = await queue.getJobs(['waiting', 'active', 'completed', 'delayed', 'failed'], 0, -1);
  for (const job of jobs) {
    const carried = isOrderBatch(job.data) ? (job.data.orders as OrderRecord[]) : [job.data];
    for (const o of carried) reserved.delete(o.orderId);
  }
  return reserved.size;
}
