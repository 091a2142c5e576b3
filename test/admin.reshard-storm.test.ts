// Live resharding and restocking under an order storm (DESIGN.md §5): stock is conserved through 20
// reshards and 2 restocks with hundreds of orders in flight, and nothing is refused while stock is left.
import assert from 'node:assert/strict';
import { describe, it, type TestContext } from 'node:test';
import { until } from '../harness/async.ts';
import {
  acceptedIds,
  assertConserved,
  assertOnlyExpectedStatuses,
  type Body,
  counter,
  generationOf,
  median,
  type Outcome,
  RESHARD_ENV,
  reshard,
  restock,
  storm,
  tally,
} from '../harness/reshard.ts';
import { createSale, spawnService } from '../harness/service.ts';
import { useService } from './support/suite.ts';

const { infra } = useService();

describe('live reshard and restock under an order storm', () => {
  it('≥ 2,000 orders, 300 in flight, 20 reshards (1..16 shards) and 2 restocks: conserved, nothing refused early', async (t: TestContext) => {
    // The service in its own process (API + writer, like `npm start`), so the load generator here
    // does not share its event loop. The 429s counted are the reshards', not a loaded machine's.
    const main = await spawnService(infra, 'main', RESHARD_ENV);
    try {
      await stormWithAdmin(t, main.url);
    } finally {
      await main.stop();
    }
  });
});

async function stormWithAdmin(t: TestContext, url: string) {
  const P = 'storm-reshard';
  const INITIAL = 4000;
  const RESTOCK = 250;
  const SUPPLY = INITIAL + 2 * RESTOCK;
  await createSale(url, P, { stock: INITIAL, shards: 8 });

  const counts = [1, 16, 3, 8, 1, 12, 5, 16, 2, 7, 4, 16, 1, 9, 6, 13, 2, 10, 16, 4];
  const steps: Array<{ kind: 'reshard'; shards: number } | { kind: 'restock'; delta: number }> = [];
  counts.forEach((shards, i) => {
    steps.push({ kind: 'reshard', shards });
    // Both restocks early, while stock is certainly left (see the gate below).
    if (i === 1 || i === 4) steps.push({ kind: 'restock', delta: RESTOCK });
  });

  const progress = { sent: 0, outcomes: [] as Outcome[] };
  let adminDoneAt = Number.POSITIVE_INFINITY;
  // Pacing, both ways: admin step k starts once k·PER_STEP orders were sent, and order i waits (only
  // if the admin lags that far) until step ⌊i / PER_STEP⌋ − LAG is done. So every change starts while
  // units are selling with hundreds of orders in flight, and the storm cannot sell out first. It also
  // keeps fewer orders than the initial stock ahead of the restocks (steps 2 and 5), so each restock
  // lands while stock is left — the precondition of the timing check below.
  const PER_STEP = SUPPLY / 25;
  const LAG = 3;
  const stepDone = steps.map(() => {
    let resolve: () => void = () => {};
    const done = new Promise<void>((r) => {
      resolve = r;
    });
    return { done, resolve };
  });
  const adminLog: Array<{ kind: string; status: number; ms: number; body: Body; soldBefore: number }> = [];
  const adminRun = (async () => {
    try {
      for (const [k, step] of steps.entries()) {
        await until(`${PER_STEP * k} orders sent before step ${k}`, () => progress.sent >= PER_STEP * k, {
          timeoutMs: 300_000,
          everyMs: 2,
        });
        const soldBefore = progress.outcomes.filter((o) => o.status === 202).length;
        const t0 = performance.now();
        const r =
          step.kind === 'reshard' ? await reshard(url, P, step.shards) : await restock(url, P, step.delta);
        adminLog.push({
          kind: step.kind,
          status: r.status,
          ms: performance.now() - t0,
          body: r.body,
          soldBefore,
        });
        stepDone[k]?.resolve();
      }
    } finally {
      for (const s of stepDone) s.resolve();
      adminDoneAt = Date.now();
    }
  })();

  const { outcomes, ms } = await storm({
    urls: [url],
    productId: P,
    inFlight: 300,
    minOrders: SUPPLY + 100,
    maxOrders: 20_000,
    progress,
    gate: (i) => stepDone[Math.floor(i / PER_STEP) - LAG]?.done,
    // After the last admin change, go on until an order that started after it is told sold out.
    until: (os) => os.some((o) => o.error === 'sold_out' && o.startedAt >= adminDoneAt),
  });
  await adminRun;

  for (const a of adminLog) assert.equal(a.status, 200, `${a.kind}: ${JSON.stringify(a.body)}`);
  const reshards = adminLog.filter((a) => a.kind === 'reshard');
  assert.equal(reshards.length, 20);
  for (const [i, a] of reshards.entries()) assert.equal(a.body.shards, counts[i]);
  for (const a of adminLog.filter((x) => x.kind === 'restock')) {
    assert.ok(
      Number(a.body.available) > RESTOCK,
      `restock landed on an empty sale: ${JSON.stringify(a.body)}`,
    );
  }

  assertOnlyExpectedStatuses(outcomes);
  const accepted = acceptedIds(outcomes);
  assert.ok(accepted.length <= SUPPLY, `oversold: ${accepted.length} > ${SUPPLY}`);
  const busy = outcomes.filter((o) => o.status === 429).length;
  assert.ok(busy < outcomes.length * 0.05, `too many 429: ${busy} of ${outcomes.length}`);

  const s = await assertConserved(infra.pool, url, P, accepted);
  assert.equal(s.total, SUPPLY);
  // Demand exceeded supply: every unit was sold, none left on a shelf while buyers were refused.
  assert.equal(s.available, 0, JSON.stringify(s));
  assert.equal(accepted.length, SUPPLY);
  assert.equal(s.generation, 1 + 20 + 2, 'every reshard and restock made one generation');

  // Stock only fell after the restocks (which found stock left), so it stayed above 0 until the
  // last unit went. A sold-out answer is only right after that, so none may come back before the
  // last accepted order even started (reserved_at is taken before its decrement; same clock).
  const r = await infra.pool.query(
    'select (extract(epoch from max(reserved_at)) * 1000)::float8 as t from orders where product_id = $1',
    [P],
  );
  const lastReservedAt = Number(r.rows[0].t);
  const early = outcomes.filter((o) => o.error === 'sold_out' && o.finishedAt < lastReservedAt);
  assert.deepEqual(
    early.map((o) => ({ startedAt: o.startedAt, finishedAt: o.finishedAt })),
    [],
    `sold out answered while stock remained (last reservation at ${lastReservedAt})`,
  );

  const generations = new Set(accepted.map(generationOf));
  const reshardMs = reshards.map((a) => a.ms);
  const during = adminLog.filter((a) => a.soldBefore < SUPPLY).length;
  t.diagnostic(
    `storm: ${outcomes.length} orders in ${Math.round(ms)} ms = ${Math.round(outcomes.length / (ms / 1000))} orders/s; ` +
      `answers ${JSON.stringify(tally(outcomes))}; 429: ${busy} (${((100 * busy) / outcomes.length).toFixed(2)}%); ` +
      `units sold in ${generations.size} generations`,
  );
  t.diagnostic(
    `reshard ms (HTTP, incl. audit): median ${median(reshardMs).toFixed(0)}, max ${Math.max(...reshardMs).toFixed(0)}; ` +
      `${during} of ${adminLog.length} admin changes started while units were still selling`,
  );
  // Server side: the change itself (admin lock, shard locks, retire, switch), without HTTP and audit.
  const inLock = {
    sum: await counter(url, 'flashsale_admin_change_duration_seconds_sum', 'kind="reshard"'),
    count: await counter(url, 'flashsale_admin_change_duration_seconds_count', 'kind="reshard"'),
  };
  if (inLock.count > 0) {
    t.diagnostic(
      `reshard server-side (locks + change): mean ${((1000 * inLock.sum) / inLock.count).toFixed(0)} ms`,
    );
  }
  // The changes really happened under load: each started while units were selling, and units were
  // sold in many generations.
  assert.equal(during, adminLog.length, 'every change started before the sale sold out');
  assert.ok(generations.size >= 5, `units sold in only ${generations.size} generations`);
}
