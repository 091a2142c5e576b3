// Phase 5, lock backends (BENCH_ONLY=lock-backends): the real path from 8 shards (as c8) with its
// shard locks on Redis, etcd and ZooKeeper (LOCK_BACKEND), side by side with the ratios to Redis; then
// issue 38's S1 sale on each (lock-backend-phase.ts), whose misses are the phase's checks.
import { LOCK_SERVERS } from '../../harness/lock-servers.ts';
import { ms, num, printTable, times } from '../lib/table.ts';
import type { BenchRun } from './bench-run.ts';
import { lockBackendPhase, reportLockBackendPhase } from './lock-backend-phase.ts';
import { BIG_STOCK } from './options.ts';
import type { Phase } from './phase.ts';
import { realPath, warmUp } from './rounds.ts';
import { type ScenarioResult as R, runScenario } from './scenario.ts';

const BACKENDS = [{ name: 'redis', start: async () => ({ env: {}, stop: async () => {} }) }, ...LOCK_SERVERS];

/**
 * Each lock service a private server, the API and writer spawned fresh for each. The writer gets the
 * same LOCK_BACKEND: its sweeper returns units under the same shard locks.
 */
async function onBackend(bench: BenchRun, backend: (typeof BACKENDS)[number]): Promise<R> {
  bench.log(`phase 5: real path, 8 shards, LOCK_BACKEND=${backend.name}`);
  const server = await backend.start();
  try {
    const env = { LOCK_BACKEND: backend.name, ...server.env };
    const worker = await bench.spawn('worker', env);
    const api = await bench.spawn('api', env);
    const product = (k: string) => `bench-lb-${backend.name}-${k}`;
    for (const k of ['warm', 'c8']) await bench.createSale(api.url, product(k), BIG_STOCK, 8);
    await warmUp(bench, [api.url], product('warm'), ['/api/orders'], 'rows');
    const label = `real path, 8 shards, LOCK_BACKEND=${backend.name}`;
    const r = await runScenario(bench, realPath(`c8-${backend.name}`, label, [api.url], product('c8')));
    await bench.stop(api);
    await bench.stop(worker);
    return r;
  } finally {
    await server.stop();
  }
}

function printBackends(runs: R[]): void {
  const redis = runs[0]?.perSecond ?? Number.NaN;
  printTable(
    'Shard locks by LOCK_BACKEND (real path, 8 shards, side by side)',
    [
      { header: 'scenario', value: (r: R) => r.key, align: 'left' },
      { header: 'orders/s', value: (r: R) => num(r.perSecond) },
      { header: 'x Redis', value: (r: R) => times(r.perSecond / redis) },
      { header: 'p50 ms', value: (r: R) => ms(r.latency.p50) },
      { header: 'p99 ms', value: (r: R) => ms(r.latency.p99) },
      { header: 'lock wait ms', value: (r: R) => ms(r.lock?.meanWaitMs ?? Number.NaN) },
      { header: 'hand-offs/order', value: (r: R) => (r.lock?.handoffsPerOrder ?? Number.NaN).toFixed(2) },
    ],
    runs,
  );
}

export const lockBackendsPhase: Phase = {
  name: 'lock-backends',
  inFullRun: true,
  async run(bench) {
    const runs: R[] = [];
    for (const backend of BACKENDS) runs.push(await onBackend(bench, backend));
    const s1 = await lockBackendPhase(bench.infra, (line) => bench.log(line));
    return {
      scenarios: runs,
      report() {
        printBackends(runs);
        return { checks: reportLockBackendPhase(s1) };
      },
    };
  },
};
