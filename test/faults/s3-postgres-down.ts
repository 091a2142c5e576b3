// Scenario 3: Postgres stopped for 20 s in the middle of a paced load (2,700 orders at 100/s for
// 2,400 units), on a private Postgres cluster started for this scenario (never the shared server):
// `pg_ctl stop -m immediate` (a crash: no checkpoint, connections cut), 20 s later `pg_ctl start`.
// Orders must keep being accepted meanwhile (the order path does not touch Postgres), the writer
// must retry and catch up after, and nothing may be lost.
import {
  emptyResult,
  fail,
  Load,
  log,
  Processes,
  putSale,
  randomId,
  type ScenarioResult,
  Supervised,
  sleep,
  startFaultInfra,
  Targets,
  tally,
  verifyOrders,
} from './lib.ts';

const STOCK = 2400;
const ORDERS = 2700;
const RATE = 100;
const DOWN_AT_MS = 3000;
const DOWN_FOR_MS = 20_000;

export async function postgresDown(): Promise<ScenarioResult> {
  const result = emptyResult('3', 'Postgres down 20 s under load');
  // Commits wait 50 ms for their WAL flush (a slow disk), so the busy writer has a transaction open
  // when Postgres dies: the outage hits it mid-batch, the worst moment, every time.
  const infra = await startFaultInfra({
    privatePostgres: true,
    pgSettings: { commit_delay: '50000', commit_siblings: '0' },
  });
  const cluster = infra.pg;
  if (!cluster) throw new Error('no private Postgres cluster');
  const procs = new Processes();
  try {
    // Both processes run under a supervisor: a process that dies while Postgres is away is restarted
    // (as systemd or Kubernetes would), and the crash is reported.
    const worker = await Supervised.start(procs, infra, 'worker');
    let targets: Targets | undefined;
    const api = await Supervised.start(
      procs,
      infra,
      'api',
      {},
      {
        onDown: () => targets?.down(0),
        onUp: (s) => targets?.up(0, s.url),
      },
    );
    targets = new Targets([api.current.url]);
    const productId = randomId('s3');
    await putSale(targets, productId, { stock: STOCK, shards: 8 });

    const load = new Load({
      targets,
      productId,
      orders: ORDERS,
      concurrency: 32,
      ratePerSec: RATE,
      order: (i) => ({ userId: `u${i}`, quantity: 1, key: `${productId}-k${i}` }),
    });
    const window = { stoppedAt: 0, startedAt: 0, rowsAtStop: 0, caughtUpMs: -1 };
    const chaos = (async () => {
      await sleep(DOWN_AT_MS);
      window.rowsAtStop = await infra.rows(productId);
      await cluster.stopServer('immediate');
      window.stoppedAt = performance.now();
      log('3', `Postgres stopped (immediate) with ${window.rowsAtStop} rows written`);
      await sleep(DOWN_FOR_MS);
      await cluster.startServer();
      window.startedAt = performance.now();
      log('3', `Postgres started again after ${((window.startedAt - window.stoppedAt) / 1000).toFixed(1)} s`);
      // How long the writer takes to persist the backlog of orders accepted while Postgres was down.
      const before = tally(load.logs).acceptedIds.size;
      const deadline = Date.now() + 75_000;
      while (Date.now() < deadline) {
        const rows = await infra.rows(productId).catch((err: Error) => {
          if (process.env.FAULTS_DEBUG) log('3', `rows: ${err.message}`);
          return 0;
        });
        if (process.env.FAULTS_DEBUG) log('3', `rows ${rows} of ${before}`);
        if (rows >= before) {
          window.caughtUpMs = Math.round(performance.now() - window.startedAt);
          break;
        }
        await sleep(100);
      }
    })();
    await Promise.all([load.done, chaos]);

    const duringOutage = load.logs.filter((l) =>
      l.attempts.some(
        (a) => a.kind === 'answer' && a.status === 202 && a.at >= window.stoppedAt && a.at < window.startedAt,
      ),
    ).length;
    const sentDuringOutage = load.logs.filter((l) =>
      l.attempts.some((a) => a.at >= window.stoppedAt && a.at < window.startedAt),
    ).length;
    result.faults = `Postgres stopped ${((window.startedAt - window.stoppedAt) / 1000).toFixed(1)} s; ${duringOutage} of ${sentDuringOutage} orders sent meanwhile accepted; backlog persisted ${(window.caughtUpMs / 1000).toFixed(1)} s after restart`;
    Object.assign(result.details, {
      rowsAtStop: window.rowsAtStop,
      acceptedDuringOutage: duringOutage,
      sentDuringOutage,
      backlogPersistedMsAfterRestart: window.caughtUpMs,
    });
    if (duringOutage === 0 || duringOutage < sentDuringOutage * 0.9) {
      result.ok = false;
      result.failures.push(
        `orders were not accepted while Postgres was down: ${duringOutage} of ${sentDuringOutage}`,
      );
    }
    if (window.caughtUpMs < 0) {
      result.ok = false;
      result.failures.push('the writer did not catch up within 75 s of Postgres coming back');
    }
    await verifyOrders(result, infra, targets, load.logs, {
      productId,
      total: STOCK,
      oneOrderPerUser: true,
      drainTimeoutMs: 100_000,
    });
    worker.stop();
    api.stop();
    for (const c of [...worker.crashes, ...api.crashes]) {
      fail(
        result,
        `the ${c.entry} process crashed when Postgres went down (restarted by the test's supervisor): ${c.reason.slice(0, 400)}`,
      );
    }
    result.details.crashes = [...worker.crashes, ...api.crashes];
  } catch (err) {
    result.ok = false;
    result.failures.push(`scenario error: ${(err as Error).stack ?? err}`);
  } finally {
    await procs.reapAll();
    await infra.stop();
  }
  return result;
}
