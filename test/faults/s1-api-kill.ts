// Scenario 1: kill -9 the API process five times at random moments of a 2,400-order load (2,000
// units, 8 shards), restarting it each time; the writer and sweeper run in a separate worker process
// that is never killed. Every order carries its own Idempotency-Key and user; orders that got no
// answer are retried with the same key afterwards, like a real client would.
// Checks: every 202 has exactly one row; rows without a 202 only for requests whose answer was lost;
// one row at most per logical order; sold == rows; no oversell.
import {
  emptyResult,
  killApiDuring,
  Load,
  log,
  orderRows,
  retryUnanswered,
  type ScenarioResult,
  sleep,
  spreadPoints,
  startSale,
  unitOrder,
  verifyOrders,
  withFaultInfra,
} from './lib.ts';

const STOCK = 2000;
const ORDERS = 2400;
const KILLS = 5;

export async function apiKill(): Promise<ScenarioResult> {
  const result = emptyResult('1', 'API kill -9 ×5 under load');
  return withFaultInfra(result, {}, async (infra, procs) => {
    const sale = await startSale(infra, procs, 's1', { stock: STOCK, shards: 8 });
    const { targets, productId } = sale;
    const load = new Load({
      targets,
      productId,
      orders: ORDERS,
      concurrency: 64,
      order: unitOrder(productId),
    });
    const [, killedAt] = await Promise.all([
      load.done,
      killApiDuring({
        infra,
        procs,
        targets,
        load,
        api: sale.api,
        points: spreadPoints(KILLS, ORDERS * 0.08, ORDERS * 0.85),
        beforeKill: () => sleep(Math.random() * 40),
        afterKill: async () =>
          log('1', `killed the API after ${load.dispatched} orders dispatched; restarting`),
      }),
    ]);
    const { retried, stuck } = await retryUnanswered(targets, productId, load.logs, 1);
    result.faults = `${killedAt.length} API kills (at ${killedAt.join(', ')} orders), ${retried} retries with the same key`;
    result.details.killedAtDispatched = killedAt;
    result.details.retriedWithSameKey = retried;
    result.details.stuckKeys = stuck.length;
    await verifyOrders(result, infra, targets, load.logs, {
      productId,
      total: STOCK,
      oneOrderPerUser: true,
    });
    if (stuck.length > 0) {
      // Each logical order has its own user: a row for a stuck key's user is the order it hides.
      const users = new Set((await orderRows(infra.pool, productId)).map((r) => r.user_id));
      const hiding = stuck.filter((l) => users.has(l.userId)).length;
      result.details.stuckKeysWithAnOrder = hiding;
      result.notes.push(
        `${stuck.length} Idempotency-Keys stay "request_in_progress" (for 24 h) after the API that claimed them was killed; ${hiding} of them hide an order that was placed, whose id the client can never learn`,
      );
    }
  });
}
