// Scenario 2: kill -9 the writer (worker process: BullMQ writer + sweeper) three times while it holds
// jobs of an open or committing batch, restarting it each time, under a paced 2,400-order load on a
// separate API process that is never killed. The jobs the dead writer held are taken back by BullMQ's
// stalled-job check (lock expiry) and replayed; the insert is idempotent on the order id.
// Checks: no 202 lost, no row doubled, sold == rows, no oversell. Reports, for each kill, how long it
// took until every order accepted before it had its row (the writer's lock settings at their defaults).
import {
  emptyResult,
  type FaultInfra,
  Load,
  log,
  type ScenarioResult,
  sleep,
  startSale,
  tally,
  unitOrder,
  verifyOrders,
  withFaultInfra,
} from './lib.ts';

const STOCK = 2000;
const ORDERS = 2400;
const KILLS = 3;
// Batches stay open a little longer, so a kill finds jobs held in one.
const WRITER_ENV = { WRITER_BATCH_MS: '100' };
// Longer than any recovery BullMQ's own defaults (30 s lock, 30 s stalled check) ever gave.
const RECOVERY_TIMEOUT_MS = 100_000;

interface Recovery {
  /** Orders accepted before the kill that had no row just after it. */
  waiting: number;
  /** From the kill until every order accepted before it has a row; undefined: not within the timeout. */
  ms?: number;
}

/** Watches the orders accepted before a kill (`ids`) until all have rows. */
async function watchRecovery(infra: FaultInfra, ids: string[], killedAt: number): Promise<Recovery> {
  let missing = ids;
  let waiting: number | undefined;
  for (;;) {
    const { rows } = await infra.pool.query<{ id: string }>('select id from orders where id = any($1)', [
      missing,
    ]);
    const found = new Set(rows.map((r) => r.id));
    missing = missing.filter((id) => !found.has(id));
    waiting ??= missing.length;
    const elapsed = performance.now() - killedAt;
    if (missing.length === 0) return { waiting, ms: Math.round(elapsed) };
    if (elapsed > RECOVERY_TIMEOUT_MS) return { waiting };
    await sleep(100);
  }
}

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
    const kills: Array<{
      atMs: number;
      dispatched: number;
      activeJobs: number;
      rowsBefore: number;
      acceptedBefore: number;
      recovery?: Recovery;
    }> = [];
    const watches: Array<Promise<void>> = [];
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
        const accepted = [...tally(load.logs).acceptedIds];
        await worker.kill();
        const killedAt = performance.now();
        const kill: (typeof kills)[number] = {
          atMs: Math.round(killedAt - load.startedAt),
          dispatched: Math.min(load.dispatched, ORDERS),
          activeJobs: active,
          rowsBefore,
          acceptedBefore: accepted.length,
        };
        kills.push(kill);
        // Watched alongside the next kills: a slow recovery may overlap them.
        watches.push(
          watchRecovery(infra, accepted, killedAt).then((r) => {
            kill.recovery = r;
          }),
        );
        log('2', `killed the writer holding ${active} active jobs (${rowsBefore} rows so far)`);
        await sleep(100 + Math.random() * 200);
        worker = await procs.spawn(infra, 'worker', WRITER_ENV);
      }
    })();
    await Promise.all([load.done, chaos]);
    await Promise.all(watches);
    result.faults = `${kills.length} writer kills holding ${kills.map((k) => k.activeJobs).join('/')} active jobs`;
    result.details.kills = kills;
    result.details.recoveryMs = kills.map((k) => k.recovery?.ms ?? null);
    const summary = kills.map(({ recovery: r }) => {
      const s = r?.ms === undefined ? `>${RECOVERY_TIMEOUT_MS / 1000}` : (r.ms / 1000).toFixed(1);
      return `${s} s (${r?.waiting} waiting)`;
    });
    result.notes.push(
      `recovery after each kill, until every order accepted before it has a row: ${summary.join(' / ')}`,
    );
    const midBatch = kills.filter((k) => k.activeJobs > 0).length;
    if (midBatch < kills.length)
      result.notes.push(`only ${midBatch} of ${kills.length} kills found the writer holding jobs`);
    await verifyOrders(result, infra, targets, load.logs, {
      productId,
      total: STOCK,
      oneOrderPerUser: true,
      // Jobs held by a killed writer come back only after their BullMQ lock lapses (WRITER_LOCK_MS,
      // 10 s) and a stalled check (every WRITER_STALLED_INTERVAL_MS, 5 s) has seen it twice.
      drainTimeoutMs: 60_000,
    });
  });
}
