// Scenario 8: pay or expire under faults. A sale with a 3 s payment window; a paced load; about 60 %
// of the accepted orders are paid at once. Then, while the unpaid ones reach their deadline, the
// private Postgres is stopped (immediate), the worker is killed (kill -9) and later the API too;
// Postgres comes back after the deadlines passed. Expiry must happen meanwhile (it needs Redis only),
// exactly once; after recovery every accepted order is one row, paid if its payment was answered
// 200 and expired otherwise, with one fate in its history; every expired unit is back on sale and
// sold again to new buyers, who pay: the sale ends with every unit paid.
import {
  adminHeaders,
  check,
  deliver,
  emptyResult,
  fail,
  log,
  type OrderLog,
  putSale,
  randomId,
  type ScenarioResult,
  Supervised,
  sleep,
  submitOrder,
  Targets,
  tally,
  verifyOrders,
  withFaultInfra,
} from './lib.ts';

const STOCK = 300;
const PAY_RATIO = 0.6;
const ENV = { EXPIRY_INTERVAL_MS: '100' };

export async function payOrExpire(): Promise<ScenarioResult> {
  const result = emptyResult('8', 'pay or expire: Postgres down, worker and API kill -9');
  return withFaultInfra(result, { privatePostgres: true, env: ENV }, async (infra, procs) => {
    const cluster = infra.pg;
    if (!cluster) throw new Error('no private Postgres cluster');
    const worker = await Supervised.start(procs, infra, 'worker');
    let targets: Targets | undefined;
    const api = await Supervised.start(
      procs,
      infra,
      'api',
      {},
      { onDown: () => targets?.down(0), onUp: (s) => targets?.up(0, s.url) },
    );
    targets = new Targets([api.current.url]);
    const productId = randomId('s8');
    await putSale(targets, productId, { stock: STOCK, shards: 4, paymentTimeoutSec: 3 });

    // Round 1: every unit sold; a share paid as soon as it is accepted, the rest left to expire.
    const first = await buyAndPay(targets, productId, STOCK, 'u', PAY_RATIO);
    const accepted = [...tally(first.logs).acceptedIds];
    const payAnswers = first.payAnswers;
    const paid = [...payAnswers.entries()].filter(([, s]) => s === 200).map(([id]) => id);
    log('8', `${accepted.length} accepted, ${paid.length} paid; stopping Postgres, killing the worker`);

    // Faults while the deadlines pass: Postgres down, worker killed, then the API killed.
    await cluster.crash();
    worker.current.proc.kill('SIGKILL');
    const sale = `sale:{${productId}}`;
    const expiredMeanwhile = await waitFor(async () => {
      const [expired, returning] = await infra.client.hmget(sale, 'expired', 'returning');
      return Number(expired) === accepted.length - paid.length && Number(returning) === 0;
    }, 60_000);
    check(
      result,
      expiredMeanwhile,
      'unpaid orders did not expire (units back on sale) while Postgres was down',
    );
    api.current.proc.kill('SIGKILL');
    await sleep(1000);
    await cluster.startServer();
    log('8', 'Postgres started again');

    // Round 2: the returned units sold again to new buyers, who all pay at once (more buyers than units).
    const second = await buyAndPay(targets, productId, STOCK - paid.length + 20, 'again', 1);
    const resold = [...tally(second.logs).acceptedIds];
    const resoldPaid = [...second.payAnswers.values()].filter((s) => s === 200).length;
    check(
      result,
      resold.length === STOCK - paid.length && resoldPaid === resold.length,
      `${resold.length} units resold (${resoldPaid} paid), expected the ${STOCK - paid.length} that expired, all paid`,
    );

    await verifyOrders(result, infra, targets, [...first.logs, ...second.logs], {
      productId,
      total: STOCK,
      oneOrderPerUser: true,
      drainTimeoutMs: 120_000,
    });
    // Each accepted order: one row whose status is what its payment was answered, one fate in history.
    const rows = await infra.pool.query<{ id: string; status: string; fates: number }>(
      `select o.id, o.status,
              (select count(*)::int from order_status_history h
                where h.order_id = o.id and h.status in ('paid', 'expired', 'cancelled')) as fates
         from orders o where o.product_id = $1`,
      [productId],
    );
    const byId = new Map(rows.rows.map((r) => [r.id, r]));
    let wrong = 0;
    for (const id of accepted) {
      const want = payAnswers.get(id) === 200 ? 'paid' : 'expired';
      const row = byId.get(id);
      if (!row || row.status !== want || row.fates !== 1) wrong += 1;
    }
    for (const id of resold) if (byId.get(id)?.status !== 'paid') wrong += 1;
    check(result, wrong === 0, `${wrong} orders whose row status or history differs from their payment`);
    const rec = await deliver(
      targets,
      'GET',
      `/admin/products/${productId}/reconcile`,
      undefined,
      adminHeaders,
    );
    check(result, rec.kind === 'answer' && rec.body.ok === true, `reconcile: ${JSON.stringify(rec)}`);
    const status = rec.kind === 'answer' ? rec.body : {};
    check(
      result,
      status.available === 0 && status.sold === STOCK,
      `not every unit ended paid: ${JSON.stringify(status)}`,
    );
    result.faults = `Postgres down and worker + API kill -9 while ${accepted.length - paid.length} unpaid orders expired; ${resold.length} units resold and paid`;
    Object.assign(result.details, { accepted: accepted.length, paid: paid.length, resold: resold.length });
    worker.stop();
    api.stop();
    for (const c of [...worker.crashes, ...api.crashes]) {
      if (c.signal !== 'SIGKILL') fail(result, `the ${c.entry} process crashed: ${c.reason.slice(0, 400)}`);
    }
  });
}

/**
 * `n` buyers (users `<prefix>-i`, 16 at a time), each ordering one unit with its own Idempotency-Key
 * and, with probability `payRatio`, paying it as soon as it is accepted. Returns the order logs and the
 * status each payment was answered.
 */
async function buyAndPay(
  targets: Targets,
  productId: string,
  n: number,
  prefix: string,
  payRatio: number,
): Promise<{ logs: OrderLog[]; payAnswers: Map<string, number> }> {
  const logs: OrderLog[] = [];
  const payAnswers = new Map<string, number>();
  let next = 0;
  const buyer = async () => {
    while (next < n) {
      const i = next++;
      const o = { userId: `${prefix}-${i}`, quantity: 1, key: `${productId}-${prefix}-${i}` };
      const entry: OrderLog = { ...o, i, attempts: [await submitOrder(targets, productId, o)] };
      logs.push(entry);
      const last = entry.attempts[0];
      if (last?.kind !== 'answer' || last.status !== 202 || Math.random() >= payRatio) continue;
      const orderId = String(last.body.orderId);
      const r = await deliver(targets, 'POST', `/api/orders/${orderId}/pay`, { userId: o.userId });
      if (r.kind === 'answer') payAnswers.set(orderId, r.status);
    }
  };
  await Promise.all(Array.from({ length: 16 }, buyer));
  return { logs, payAnswers };
}

async function waitFor(check: () => Promise<boolean>, timeoutMs: number): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (await check().catch(() => false)) return true;
    await sleep(100);
  }
  return false;
}
