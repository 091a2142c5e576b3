// Cluster mode of `npm run bench` (BENCH_REDIS=cluster): the real order path on one redis-server and on
// a private 3-master + 3-replica Redis Cluster, side by side in one run, then with REDIS_WAIT_REPLICAS=1.
//
// Each run: an API process and a writer process (as in phase 2), a sale of 6 shards (2 per master on
// the cluster), autocannon for BENCH_SECONDS at BENCH_CONNECTIONS; after it, rows == accepted and the
// service's reconcile. Per Redis node, from INFO: the commands it served per accepted order
// (commandstats, inner Lua calls included, hand-off and writer included) and its CPU seconds.
// Printed: orders/s and latency per run, commands per order in total and per master, each master's
// share of the masters' CPU (balanced within ±25 % of an even share), the cost of the WAIT, and a
// model (labelled as one) of what the measured per-master cost means on a machine with more cores.
import { setTimeout as sleep } from 'node:timers/promises';
import { startClusterInfra } from '../../harness/redis-cluster.ts';
import { type ServiceInfra, type Spawned, spawnService, startInfra } from '../../harness/service.ts';
import { commandStats, diffCommandStats, serverCpuSeconds } from '../lib/redis-info.ts';
import { summarize, sumValues } from '../lib/stats.ts';
import { ms, num } from '../lib/table.ts';
import { settleAndCheck, type Violation } from './checks.ts';
import { type CountedNode, type Run, reportCluster } from './cluster-report.ts';
import { processCpuSeconds } from './cpu.ts';
import { startLoad } from './load.ts';
import { createSale } from './sales.ts';

const SHARDS = 6;
const IDLE_MS = 2000;
const STOCK = 10_000_000;
/** Probes of the bench itself and of ioredis' slot refreshes, not the order path's work. */
const NOT_ORDER_WORK = ['info', 'cluster|slots', 'cluster|nodes', 'cluster|info', 'cluster|shards', 'ping'];

export interface ClusterBenchOptions {
  seconds: number;
  connections: number;
  warmupSeconds: number;
  log: (line: string) => void;
}

async function readNodes(nodes: CountedNode[]) {
  return Promise.all(
    nodes.map(async (n) => ({ calls: await commandStats(n.client), cpu: await serverCpuSeconds(n.client) })),
  );
}

/** Each node's CPU per second while the services are up but no order comes (cron, cluster bus, pings). */
async function idleCpu(nodes: CountedNode[]): Promise<number[]> {
  const from = await readNodes(nodes);
  const start = performance.now();
  await sleep(IDLE_MS);
  const to = await readNodes(nodes);
  const seconds = (performance.now() - start) / 1000;
  return to.map((t, i) => (t.cpu - (from[i]?.cpu ?? 0)) / seconds);
}

interface Spec {
  key: string;
  label: string;
  url: string;
  productId: string;
  infra: ServiceInfra & RowsOf;
  /** The API and writer processes, whose CPU is counted too. */
  pids: (number | undefined)[];
}

type Reading = Awaited<ReturnType<typeof readNodes>>;

/** Each node's commands and CPU between two readings. */
function workOf(nodes: CountedNode[], before: Reading, after: Reading, idle: number[], wallSeconds: number) {
  return nodes.map((n, i) => {
    const calls = diffCommandStats(before[i]?.calls ?? {}, after[i]?.calls ?? {}, NOT_ORDER_WORK);
    const cpuSeconds = (after[i]?.cpu ?? 0) - (before[i]?.cpu ?? 0);
    const commands = sumValues(calls);
    return {
      address: n.address,
      role: n.role,
      calls,
      commands,
      cpuSeconds,
      idleCpuPerSecond: idle[i] ?? 0,
      wallSeconds,
    };
  });
}

/** One measured run of the real path against `url` (its writer beside it), with per-node Redis work. */
async function measure(
  o: ClusterBenchOptions,
  spec: Spec,
  nodes: CountedNode[],
  violations: Violation[],
): Promise<Run> {
  await createSale(spec.url, spec.productId, STOCK, SHARDS);
  const common = {
    targets: [{ url: spec.url, path: '/api/orders' }],
    productId: spec.productId,
    connections: o.connections,
    expectStatus: 202,
  };
  const warm = await startLoad({ ...common, userPrefix: `${spec.key}-warm`, seconds: o.warmupSeconds }).done;
  // The fixed cost, subtracted from the run's to get the marginal cost of the orders.
  const idle = await idleCpu(nodes);
  const before = await readNodes(nodes);
  const serviceBefore = spec.pids.map(processCpuSeconds);
  const started = performance.now();
  const r = await startLoad({ ...common, userPrefix: spec.key, seconds: o.seconds }).done;
  const wallSeconds = (performance.now() - started) / 1000;
  const serviceCpu = spec.pids.reduce<number>(
    (sum, pid, i) => sum + processCpuSeconds(pid) - (serviceBefore[i] ?? Number.NaN),
    0,
  );
  const after = await readNodes(nodes);
  const settled = await settleAndCheck({
    scenario: spec.key,
    url: spec.url,
    productId: spec.productId,
    accepted: r.accepted + warm.accepted,
    unknown: r.unknown + warm.unknown,
    rows: spec.infra.rows,
  });
  violations.push(...settled.violations);
  const work = workOf(nodes, before, after, idle, wallSeconds);
  const latency = summarize(r.latencies);
  const verdict = settled.violations.length ? '  VIOLATION(S)' : '  invariants ok';
  o.log(
    `  ${spec.key.padEnd(13)} ${num(r.okPerSecond).padStart(6)}/s  p50 ${ms(latency.p50)} ms  p99 ${ms(latency.p99)} ms  ${JSON.stringify(r.statuses)}${verdict}`,
  );
  const { key, label } = spec;
  return {
    key,
    label,
    perSecond: r.okPerSecond,
    latency,
    accepted: r.accepted,
    statuses: r.statuses,
    nodes: work,
    serviceCpuSeconds: serviceCpu,
  };
}

interface RowsOf {
  rows(productId?: string): Promise<number>;
}

/** Starts an API and a writer process on `infra`, runs `body`, stops them. */
async function withService<T>(
  infra: ServiceInfra,
  env: Record<string, string>,
  body: (url: string, pids: (number | undefined)[]) => Promise<T>,
): Promise<T> {
  const spawned: Spawned[] = [];
  try {
    spawned.push(await spawnService(infra, 'worker', env));
    const api = await spawnService(infra, 'api', { LOG_LEVEL: 'warn', ...env });
    spawned.push(api);
    return await body(
      api.url,
      spawned.map((s) => s.proc.pid),
    );
  } finally {
    for (const s of spawned.reverse()) await s.stop().catch(() => {});
  }
}

export async function clusterBench(o: ClusterBenchOptions): Promise<Violation[]> {
  const violations: Violation[] = [];
  const runs: Run[] = [];

  o.log('cluster mode: 1 API process + 1 writer process, a sale of 6 shards');
  const single = await startInfra();
  try {
    const nodes: CountedNode[] = [{ address: single.redis.url, role: 'single', client: single.client }];
    await withService(single, {}, async (url, pids) => {
      const spec = { key: 'single', label: 'one redis-server', url, productId: 'bench-single', pids };
      runs.push(await measure(o, { ...spec, infra: single }, nodes, violations));
    });
  } finally {
    await single.stop();
  }

  const cluster = await startClusterInfra();
  try {
    const nodes: CountedNode[] = (await cluster.cluster.nodes()).map((n) => ({
      address: n.address,
      role: n.role === 'master' ? 'master' : 'replica',
      client: n.server.client(),
    }));
    const runOn = (key: string, label: string, env: Record<string, string>) =>
      withService(cluster, env, async (url, pids) => {
        const spec = { key, label, url, productId: `bench-${key.replace('+', '-')}`, pids };
        runs.push(await measure(o, { ...spec, infra: cluster }, nodes, violations));
      });
    await runOn('cluster', '3 masters + 3 replicas', {});
    await runOn('cluster+wait1', 'the same, REDIS_WAIT_REPLICAS=1', { REDIS_WAIT_REPLICAS: '1' });
  } finally {
    await cluster.stop();
  }

  reportCluster(runs, violations);
  return violations;
}
