// Scenario 3: Postgres stopped for 20 s in the middle of a paced load (2,700 orders at 100/s for
// 2,400 units), on a private Postgres cluster started for this scenario (never the shared server):
// an immediate shutdown (SIGQUIT to the postmaster, as `pg_ctl stop -m immediate`: no checkpoint,
// connections cut) at a moment the writer has a transaction open, 20 s later `pg_ctl start`.
// Orders must keep being accepted meanwhile (the order path does not touch Postgres), the writer
// must retry and catch up after, and nothing may be lost.
import {
  check,
  emptyResult,
  fail,
  Load,
  log,
  putSale,
  randomId,
  type ScenarioResult,
  Supervised,
  sleep,
  Targets,
  tally,
  unitOrder,
  verifyOrders,
  withFaultInfra,
} from './lib.ts';

const STOCK = 2400;
const ORDERS = 2700;
const RATE = 100;
const DOWN_AT_MS = 3000;
const DOWN_FOR_MS = 20_000;

export async function postgresDown(): Promise<ScenarioResult> {
  const result = emptyResult('3', 'Postgres down 20 s under load');
  // Commits wait 50 ms for their WAL flush (a slow disk), so the writer often has a transaction
  // open; Postgres is cut at such a moment: mid-batch, the worst one for the writer.
  const options = { privatePostgres: true, pgSettings: { commit_delay: '50000', commit_siblings: '0' } };
  return withFaultInfra(result, options, async (infra, procs) => {
    const cluster = infra.pg;
    if (!cluster) throw new Error('no private Postgres cluster');
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
      order: unitOrder(productId),
    });
    const window = { stoppedAt: 0, startedAt: 0, rowsAtStop: 0, caughtUpMs: -1 };
    const chaos = (async () => {
      await sleep(DOWN_AT_MS);
      window.rowsAtStop = await infra.rows(productId);
      // Cut Postgres while the writer has a transaction open (an INSERT or its COMMIT in flight).
      const until = Date.now() + 5000;
      while (Date.now() < until) {
        const open = await infra.pool
          .query<{ n: number }>(
            `select count(*)::int as n from pg_stat_activity
              where datname = current_database() and pid <> pg_backend_pid()
                and backend_type = 'client backend' and xact_start is not null`,
          )
          .then((r) => r.rows[0]?.n ?? 0);
        if (open > 0) break;
        await sleep(2);
      }
      await cluster.crash();
      window.stoppedAt = performance.now();
      log('3', `Postgres stopped (immediate) with ${window.rowsAtStop} rows written`);
      await sleep(DOWN_FOR_MS);
      await cluster.startServer();
      window.startedAt = performance.now();
      log('3', `Postgres started again after ${((window.startedAt - window.stoppedAt) / 1000).toFixed(1)} s`);
      // How long the writer takes to persist the backlog: every order accepted before the restart.
      const backlog = [...tally(load.logs).acceptedIds];
      const deadline = Date.now() + 90_000;
      while (Date.now() < deadline) {
        const persisted = await infra.pool
          .query<{ n: number }>('select count(*)::int as n from orders where id = any($1)', [backlog])
          .then((r) => r.rows[0]?.n ?? 0)
          .catch(() => 0);
        if (process.env.FAULTS_DEBUG) log('3', `backlog ${persisted} of ${backlog.length} persisted`);
        if (persisted >= backlog.length) {
          window.caughtUpMs = Math.round(performance.now() - window.startedAt);
          break;
        }
        await sleep(100);
      }
    })();
    await Promise.all([load.done, chaos]);

    // What the orders sent while Postgres was down were told: accepted, or sold out once the stock
    // was gone — never refused for want of Postgres.
    const outage: Record<string, number> = {};
    for (const l of load.logs) {
      for (const a of l.attempts) {
        if (a.at < window.stoppedAt || a.at >= window.startedAt) continue;
        const label =
          a.kind === 'noAnswer' ? 'no answer' : `${a.status}${a.body.error ? ` ${a.body.error}` : ''}`;
        outage[label] = (outage[label] ?? 0) + 1;
      }
    }
    const accepted = outage['202'] ?? 0;
    const sent = Object.values(outage).reduce((a, b) => a + b, 0);
    const refused = sent - accepted - (outage['409 sold_out'] ?? 0);
    const downS = ((window.startedAt - window.stoppedAt) / 1000).toFixed(1);
    result.faults = `Postgres stopped ${downS} s; ${accepted} of ${sent} orders sent meanwhile accepted; backlog persisted ${window.caughtUpMs < 0 ? 'not within 90 s' : `${(window.caughtUpMs / 1000).toFixed(1)} s`} after restart`;
    Object.assign(result.details, {
      rowsAtStop: window.rowsAtStop,
      answersDuringOutage: outage,
      backlogPersistedMsAfterRestart: window.caughtUpMs,
    });
    check(
      result,
      accepted > 0 && refused === 0,
      `orders were refused while Postgres was down: ${JSON.stringify(outage)}`,
    );
    await verifyOrders(result, infra, targets, load.logs, {
      productId,
      total: STOCK,
      oneOrderPerUser: true,
      drainTimeoutMs: 100_000,
    });
    worker.stop();
    api.stop();
    const crashes = [...worker.crashes, ...api.crashes];
    if (window.caughtUpMs < 0 && crashes.length === 0) {
      fail(result, 'the writer did not catch up within 90 s of Postgres coming back');
    }
    for (const c of crashes) {
      fail(
        result,
        `the ${c.entry} process crashed when Postgres went down (restarted by the test's supervisor): ${c.reason.slice(0, 400)}`,
      );
    }
    result.details.crashes = [...worker.crashes, ...api.crashes];
  });
}
