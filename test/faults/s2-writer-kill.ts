// Scenario 2: kill -9 the writer (worker process: BullMQ writer + sweeper) three times while it holds
// jobs of an open or committing batch, restarting it each time, under a paced 2,400-order load on a
// separate API process that is never killed. The jobs the dead writer held are taken back by BullMQ's
// stalled-job check (lock expiry) and replayed; the insert is idempotent on the order id.
// Checks: no 202 lost, no row doubled, sold == rows, no oversell.
import {
  emptyResult,
  Load,
  log,
  type ScenarioResult,
  sleep,
  startSale,
  unitOrder,
  verifyOrders,
  withFaultInfra,
} from './lib.ts';

const STOCK = 2000;
const ORDERS = 2400;
const KILLS = 3;
// Batches stay open a little longer, so a kill finds jobs held in one.
const WRITER_ENV = { WRITER_BATCH_MS: '100' };

export async function writerKill(): Promise<ScenarioResult> {
  const result = emptyResult('2', 'writer kill -9 ×3 mid-batch');
  return withFaultInfra(result, {}, async (infra, procs) => {
    const sale = await startSale(infra, procs, 's2', { stock: STOCK, shards: 8 }, { worker: WRITER_ENV });
    const { targets, productId } = sale;
    let worker = sale.worker;

    const load = new Load({
      targets,
      productId,
      orders: ORDERS,
      concurrency: 48,
      ratePerSec: 120,
      order: unitOrder(productId),
    });
    const kills: Array<{ atMs: number; dispatched: number; activeJobs: number; rowsBefore: number }> = [];
    const chaos = (async () => {
      for (let k = 0; k < KILLS; k++) {
        // Let the (re)started writer work a while: at least one committed batch, then a random pause.
        const rowsAtStart = await infra.rows(productId);
        const settle = Date.now() + 4000;
        while ((await infra.rows(productId)) === rowsAtStart && Date.now() < settle) await sleep(50);
        await sleep(300 + Math.random() * 700);
        // Wait for the writer to hold jobs (a batch being filled or committed), then kill it.
        const until = Date.now() + 2000;
        let active = 0;
        while (Date.now() < until) {
          active = await infra.client.llen('bull:orders:active');
          if (active > 0) break;
          await sleep(2);
        }
        const rowsBefore = await infra.rows(productId);
        await worker.kill();
        kills.push({
          atMs: Math.round(performance.now() - load.startedAt),
          dispatched: Math.min(load.dispatched, ORDERS),
          activeJobs: active,
          rowsBefore,
        });
        log('2', `killed the writer holding ${active} active jobs (${rowsBefore} rows so far)`);
        await sleep(100 + Math.random() * 200);
        worker = await procs.spawn(infra, 'worker', WRITER_ENV);
      }
    })();
    await Promise.all([load.done, chaos]);
    result.faults = `${kills.length} writer kills holding ${kills.map((k) => k.activeJobs).join('/')} active jobs`;
    result.details.kills = kills;
    const midBatch = kills.filter((k) => k.activeJobs > 0).length;
    if (midBatch < kills.length)
      result.notes.push(`only ${midBatch} of ${kills.length} kills found the writer holding jobs`);
    await verifyOrders(result, infra, targets, load.logs, {
      productId,
      total: STOCK,
      oneOrderPerUser: true,
      // Jobs held by a killed writer come back only after their BullMQ lock expires (30 s) and the
      // next stalled check (every 30 s) runs.
      drainTimeoutMs: 100_000,
    });
  });
}
