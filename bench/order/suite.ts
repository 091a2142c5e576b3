// The suite phase of `npm run bench` (BENCH_ONLY=suite): a b on one API, then with the writer b+enq
// c1 c8, the MONITOR sample, live reshard, dashboard and sold-out d, then c1x2 c8x2 on two APIs.
import type { Spawned } from '../../harness/service.ts';
import { num } from '../lib/table.ts';
import type { BenchRun } from './bench-run.ts';
import { BIG_STOCK, SOLD_OUT_STOCK } from './options.ts';
import type { Phase } from './phase.ts';
import { sampleCommands } from './phase-commands.ts';
import { dashboardSlices } from './phase-dashboard.ts';
import { liveReshard } from './phase-reshard.ts';
import { realPath, repeatInterleaved, roundProduct, sellOut, warmUp } from './rounds.ts';
import { runScenario, type ScenarioResult } from './scenario.ts';
import { metric } from './service-metrics.ts';
import { reportSuite, type SuiteResult } from './suite-report.ts';

/** Products of the repeated scenarios (the first round's; later rounds get roundProduct's). */
const REPEATED = ['bench-b', 'bench-benq', 'bench-c1', 'bench-c8'];
const ONE_SHARD = ['bench-c1', 'bench-c1x2'];
const SOLD_OUT = 'bench-d';
const PRODUCTS = [
  ...['warm1', 'b', 'warm2', 'benq', 'c1', 'c8', 'c8m', 'c8s1', 'c8rs1', 'c8rs2', 'c8s2'],
  ...['c8w1', 'c8p1', 'c8p2', 'c8w2', 'd', 'warm3', 'c1x2', 'c8x2'],
].map((k) => `bench-${k}`);

/** Every sale of the suite; rounds after the first order on products of their own, so that every round's checks stand alone. */
async function createSales(bench: BenchRun, url: string): Promise<void> {
  const later = REPEATED.flatMap((id) =>
    Array.from({ length: bench.options.repeats - 1 }, (_, i) => roundProduct(id, i + 2)),
  );
  for (const id of [...PRODUCTS, ...later]) {
    const base = id.replace(/-r\d+$/, '');
    const stock = id === SOLD_OUT ? SOLD_OUT_STOCK : BIG_STOCK;
    await bench.createSale(url, id, stock, ONE_SHARD.includes(base) ? 1 : 8);
  }
}

/**
 * Phase 1: API only, no writer. (b) leaves its orders as reservations (no enqueue); they are checked
 * and then deleted before any sweeper runs, so it cannot persist them mid-benchmark.
 */
async function ceilings(bench: BenchRun, url: string): Promise<ScenarioResult[]> {
  bench.log('phase 1: 1 API process, no writer');
  await warmUp(bench, [url], 'bench-warm1', ['/bench/bare', '/bench/unlocked'], 'reservations');
  const common = { urls: [url], expectStatus: 202 };
  return repeatInterleaved(bench, [
    {
      ...common,
      key: 'a',
      label: 'bare 202 (HTTP ceiling)',
      path: '/bench/bare',
      productId: 'bench-a',
      shards: null,
      check: 'none',
    },
    {
      ...common,
      key: 'b',
      label: 'lock-free Lua decrement, no enqueue',
      path: '/bench/unlocked',
      productId: 'bench-b',
      shards: 8,
      check: 'reservations',
    },
  ]);
}

/** Phase 2: b+enq c1 c8 with the writer beside the API. */
async function withWriter(bench: BenchRun, url: string): Promise<ScenarioResult[]> {
  await warmUp(
    bench,
    [url],
    'bench-warm2',
    ['/bench/bare', '/api/orders', '/bench/unlocked?enqueue=1'],
    'rows',
  );
  return repeatInterleaved(bench, [
    {
      ...realPath('b+enq', 'lock-free Lua decrement + enqueue', [url], 'bench-benq'),
      path: '/bench/unlocked?enqueue=1',
    },
    { ...realPath('c1', 'real path, 1 shard', [url], 'bench-c1'), shards: 1 },
    realPath('c8', 'real path, 8 shards', [url], 'bench-c8'),
  ]);
}

/** d: the sold-out fast path, after a sell-out that must accept exactly the stock. */
async function soldOut(bench: BenchRun, url: string): Promise<ScenarioResult> {
  const soldBefore = await sellOut(bench, url, SOLD_OUT);
  if (soldBefore !== SOLD_OUT_STOCK) {
    const detail = `accepted ${soldBefore} of ${SOLD_OUT_STOCK} before the first sold_out`;
    bench.record([{ scenario: 'd', check: 'sell-out accepts exactly the stock', detail }]);
  }
  const fastBefore = await metric(url, 'flashsale_sold_out_fast_path_total');
  const d = await runScenario(bench, {
    ...realPath('d', 'sold-out fast path', [url], SOLD_OUT),
    expectStatus: 409,
    acceptedBefore: soldBefore,
  });
  const fast = (await metric(url, 'flashsale_sold_out_fast_path_total')) - fastBefore;
  const answered = Object.values(d.statuses).reduce((a, b) => a + b, 0);
  d.notes.push(`${num(fast)} of ${num(answered)} answers from the in-process sold-out flag`);
  if (fast < answered * 0.99)
    bench.record([{ scenario: 'd', check: 'fast path used', detail: d.notes.at(-1) as string }]);
  return d;
}

/** Phase 3: a second API process; the load is split over both (two autocannon instances). */
async function twoApis(bench: BenchRun, url: string): Promise<ScenarioResult[]> {
  bench.log('phase 3: 2 API processes + writer');
  const api2 = await bench.spawn('api');
  await warmUp(bench, [api2.url], 'bench-warm3', ['/bench/bare', '/api/orders'], 'rows');
  const results: ScenarioResult[] = [];
  for (const [key, shards] of [
    ['c1x2', 1],
    ['c8x2', 8],
  ] as const) {
    const label = `real path, ${shards} shard${shards > 1 ? 's' : ''}, 2 API processes`;
    results.push(
      await runScenario(bench, { ...realPath(key, label, [url, api2.url], `bench-${key}`), shards }),
    );
  }
  await bench.stop(api2);
  return results;
}

/** The writer joins: its own process, or API + writer in one `main` process (BENCH_TOPOLOGY=main). */
async function addWriter(bench: BenchRun, api: Spawned): Promise<{ api: Spawned; worker?: Spawned }> {
  if (bench.options.topology === 'split') {
    bench.log('phase 2: 1 API process + 1 writer process (worker)');
    return { api, worker: await bench.spawn('worker') };
  }
  bench.log('phase 2: 1 `main` process (API + writer)');
  await bench.stop(api);
  return { api: await bench.spawn('main') };
}

async function suite(bench: BenchRun): Promise<SuiteResult> {
  const first = await bench.spawn('api');
  await createSales(bench, first.url);
  const results = await ceilings(bench, first.url);
  const { api, worker } = await addWriter(bench, first);
  results.push(...(await withWriter(bench, api.url)));
  const commands = await sampleCommands(bench, api.url);
  const reshard = await liveReshard(bench, api.url);
  results.push(commands.result, ...reshard.results, ...(await dashboardSlices(bench, api.url)));
  results.push(await soldOut(bench, api.url), ...(await twoApis(bench, api.url)));
  if (worker) await bench.stop(worker);
  return { results, commands: commands.sample, reshard: reshard.live };
}

export const suitePhase: Phase = {
  name: 'suite',
  inFullRun: true,
  async run(bench) {
    const result = await suite(bench);
    return { scenarios: result.results, report: () => reportSuite(result, bench.options) };
  },
};
