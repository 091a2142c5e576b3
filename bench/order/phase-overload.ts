// Phase 4, overload (BENCH_ONLY=overload): for each API_WORKERS setting, with a writer beside, the
// real path's capacity (closed model, as c8), then an open-model crowd offering 2x and 4x it.
import type { Spawned } from '../../harness/service.ts';
import type { BenchRun } from './bench-run.ts';
import { settleAndCheck } from './checks.ts';
import { coresUsed } from './cpu.ts';
import { openLoad } from './open-load.ts';
import { BIG_STOCK } from './options.ts';
import { type OverloadRun, overloadLine, overloadRun, reportOverload } from './overload.ts';
import type { Phase } from './phase.ts';
import { realPath, warmUp } from './rounds.ts';
import { runScenario, type ScenarioResult } from './scenario.ts';

const FACTORS = [2, 4];

/** One open-model run at `factor` x the capacity; after it: drain, rows == accepted, reconcile. */
async function crowd(bench: BenchRun, api: Spawned, workers: number, factor: number, cap: ScenarioResult) {
  const o = bench.options.overload;
  const productId = `bench-ov${workers}-x${factor}`;
  const scenario = `ov${workers}x${factor}`;
  const pgPids = await bench.postgresPids();
  const cpuBefore = bench.snapshot(pgPids);
  const load = await openLoad({
    urls: [api.url],
    productId,
    userPrefix: scenario,
    rate: Math.max(1, Math.round(cap.perSecond * factor)),
    seconds: o.seconds,
    connections: o.connections,
    timeoutMs: o.timeoutMs,
  });
  const cpuAfter = bench.snapshot(pgPids);
  const cores = coresUsed(cpuBefore, cpuAfter);
  const apiCpu = {
    perOrder: ((cap.cores.api ?? 0) * cap.redis.wallSeconds) / Math.max(1, cap.redis.answers),
    run: ((cores.api ?? 0) * (cpuAfter.at - cpuBefore.at)) / 1000,
  };
  const common = { scenario, url: api.url, productId, rows: bench.infra.rows };
  const { violations } = await settleAndCheck({ ...common, accepted: load.accepted, unknown: load.unknown });
  bench.record(violations);
  const run = overloadRun(workers, factor, cap.perSecond, load, violations.length, cores, apiCpu);
  bench.log(overloadLine(run));
  return run;
}

async function withWorkers(bench: BenchRun, workers: number, runs: OverloadRun[]): Promise<ScenarioResult> {
  bench.log(`phase 4: overload, API_WORKERS=${workers} + writer process`);
  const worker = await bench.spawn('worker');
  const api = await bench.spawn('api', { API_WORKERS: String(workers) });
  const product = (k: string) => `bench-ov${workers}-${k}`;
  for (const k of ['warm', 'cap', 'x2', 'x4']) await bench.createSale(api.url, product(k), BIG_STOCK, 8);
  await warmUp(bench, [api.url], product('warm'), ['/api/orders'], 'rows');
  const label = `capacity, API_WORKERS=${workers} (closed model)`;
  const cap = await runScenario(bench, realPath(`cap${workers}`, label, [api.url], product('cap')));
  for (const factor of FACTORS) runs.push(await crowd(bench, api, workers, factor, cap));
  await bench.stop(api);
  await bench.stop(worker);
  return cap;
}

/** The .bench/orders.json section: each run's figures without its raw latencies. */
function overloadJson(runs: OverloadRun[], o: BenchRun['options']['overload']) {
  return {
    seconds: o.seconds,
    connections: o.connections,
    runs: runs.map(({ load, latency, ...r }) => ({
      ...r,
      offered: load.rate,
      sent: load.sent,
      statuses: load.statuses,
      errors: load.errors,
      timeouts: load.timeouts,
      unknown: load.unknown,
      refused: load.refused,
      refusedWithoutRetryAfter: load.refusedWithoutRetryAfter,
      maxSendLagMs: load.maxSendLagMs,
      latencyMs: { p50: latency.p50, p90: latency.p90, p99: latency.p99, max: latency.max },
    })),
  };
}

export const overloadPhase: Phase = {
  name: 'overload',
  inFullRun: true,
  async run(bench) {
    const runs: OverloadRun[] = [];
    const scenarios: ScenarioResult[] = [];
    for (const workers of bench.options.overload.workers)
      scenarios.push(await withWorkers(bench, workers, runs));
    return {
      scenarios,
      report() {
        const judged = reportOverload(runs);
        return {
          checks: judged.checks,
          json: { overload: { ...overloadJson(runs, bench.options.overload), ...judged } },
        };
      },
    };
  },
};
