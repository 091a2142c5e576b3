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
import type { Redis } from 'ioredis';
import { startClusterInfra } from '../../harness/redis-cluster.ts';
import {
  admin,
  call,
  type ServiceInfra,
  type Spawned,
  spawnService,
  startInfra,
} from '../../harness/service.ts';
import { writeJson } from '../lib/output.ts';
import { type CommandCounts, commandStats, diffCommandStats, serverCpuSeconds } from '../lib/redis-info.ts';
import { ratio, type Summary, summarize } from '../lib/stats.ts';
import { type Check, ms, num, printChecks, printTable, times } from '../lib/table.ts';
import { settleAndCheck, type Violation } from './checks.ts';
import { processCpuSeconds } from './cpu.ts';
import { startLoad } from './load.ts';

const SHARDS = 6;
const IDLE_MS = 2000;
const STOCK = 10_000_000;
/** Each master's share of the masters' Redis CPU must be within this fraction of an even share. */
const BALANCE = 0.25;
/** Probes of the bench itself and of ioredis' slot refreshes, not the order path's work. */
const NOT_ORDER_WORK = ['info', 'cluster|slots', 'cluster|nodes', 'cluster|info', 'cluster|shards', 'ping'];

export interface ClusterBenchOptions {
  seconds: number;
  connections: number;
  warmupSeconds: number;
  log: (line: string) => void;
}

/** A Redis node whose work is counted: its address, role and a plain client on it. */
interface CountedNode {
  address: string;
  role: 'master' | 'replica' | 'single';
  client: Redis;
}

interface NodeWork {
  address: string;
  role: CountedNode['role'];
  calls: CommandCounts;
  commands: number;
  cpuSeconds: number;
  /** CPU the node used per second with no load (its fixed cost). */
  idleCpuPerSecond: number;
  /** Length of the measured load, s (cpuSeconds covers it). */
  wallSeconds: number;
}

/** CPU seconds of the orders: the run's minus the fixed cost over its length. */
const marginalCpu = (n: NodeWork) => n.cpuSeconds - n.idleCpuPerSecond * n.wallSeconds;

interface Run {
  key: string;
  label: string;
  perSecond: number;
  latency: Summary;
  accepted: number;
  statuses: Record<string, number>;
  nodes: NodeWork[];
  /** CPU seconds of the API and writer processes during the load. */
  serviceCpuSeconds: number;
}

async function readNodes(nodes: CountedNode[]) {
  return Promise.all(
    nodes.map(async (n) => ({ calls: await commandStats(n.client), cpu: await serverCpuSeconds(n.client) })),
  );
}

/** One measured run of the real path against `url` (its writer beside it), with per-node Redis work. */
async function measure(
  o: ClusterBenchOptions,
  spec: {
    key: string;
    label: string;
    url: string;
    productId: string;
    infra: ServiceInfra & RowsOf;
    /** The API and writer processes, whose CPU is counted too. */
    pids: (number | undefined)[];
  },
  nodes: CountedNode[],
  violations: Violation[],
): Promise<Run> {
  const sale = await call(
    spec.url,
    'PUT',
    `/admin/products/${spec.productId}`,
    { stock: STOCK, shards: SHARDS },
    admin,
  );
  if (sale.status !== 201) throw new Error(`cannot create ${spec.productId}: ${JSON.stringify(sale.body)}`);
  const target = { url: spec.url, path: '/api/orders' };
  const common = {
    targets: [target],
    productId: spec.productId,
    connections: o.connections,
    expectStatus: 202,
  };
  const warm = await startLoad({ ...common, userPrefix: `${spec.key}-warm`, seconds: o.warmupSeconds }).done;
  // Each node's CPU while the services are up but no order comes: the fixed cost (cron, cluster bus,
  // replication pings) subtracted from the run's to get the marginal cost of the orders.
  const idleFrom = await readNodes(nodes);
  const idleStart = performance.now();
  await sleep(IDLE_MS);
  const idleTo = await readNodes(nodes);
  const idleSeconds = (performance.now() - idleStart) / 1000;
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
  const work = nodes.map((n, i) => {
    const calls = diffCommandStats(before[i]?.calls ?? {}, after[i]?.calls ?? {}, NOT_ORDER_WORK);
    return {
      address: n.address,
      role: n.role,
      calls,
      commands: Object.values(calls).reduce((a, b) => a + b, 0),
      cpuSeconds: (after[i]?.cpu ?? 0) - (before[i]?.cpu ?? 0),
      idleCpuPerSecond: ((idleTo[i]?.cpu ?? 0) - (idleFrom[i]?.cpu ?? 0)) / idleSeconds,
      wallSeconds,
    };
  });
  const run: Run = {
    key: spec.key,
    label: spec.label,
    perSecond: r.okPerSecond,
    latency: summarize(r.latencies),
    accepted: r.accepted,
    statuses: r.statuses,
    nodes: work,
    serviceCpuSeconds: serviceCpu,
  };
  o.log(
    `  ${spec.key.padEnd(13)} ${num(run.perSecond).padStart(6)}/s  p50 ${ms(run.latency.p50)} ms  p99 ${ms(run.latency.p99)} ms  ${JSON.stringify(r.statuses)}${settled.violations.length ? '  VIOLATION(S)' : '  invariants ok'}`,
  );
  return run;
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

const masters = (run: Run) => run.nodes.filter((n) => n.role === 'master');
const perOrder = (n: number, run: Run) => n / Math.max(1, run.accepted);

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

  report(runs, violations);
  return violations;
}

function report(runs: Run[], violations: Violation[]): void {
  const [single, cluster, wait] = runs as [Run, Run, Run];
  /** Sum over the nodes that take commands (the single server, or the masters) of `f`, per order, in ms. */
  const servingMs = (r: Run, f: (n: NodeWork) => number) =>
    perOrder(r.nodes.filter((n) => n.role !== 'replica').reduce((a, n) => a + f(n), 0) * 1000, r);
  printTable(
    'Cluster mode: the real order path, side by side (same machine, one run)',
    [
      { header: 'run', value: (r: Run) => r.key },
      { header: 'what', value: (r: Run) => r.label },
      { header: 'orders/s', value: (r: Run) => num(r.perSecond), align: 'right' },
      { header: 'vs single', value: (r: Run) => times(ratio(r.perSecond, single.perSecond)), align: 'right' },
      { header: 'p50 ms', value: (r: Run) => ms(r.latency.p50), align: 'right' },
      { header: 'p99 ms', value: (r: Run) => ms(r.latency.p99), align: 'right' },
      {
        header: 'cmds/order',
        value: (r: Run) => num(servingMs(r, (n) => n.commands) / 1000, 1),
        align: 'right',
      },
      {
        header: 'Redis CPU ms/order',
        value: (r: Run) =>
          num(
            servingMs(r, (n) => n.cpuSeconds),
            3,
          ),
        align: 'right',
      },
      { header: 'marginal', value: (r: Run) => num(servingMs(r, marginalCpu), 3), align: 'right' },
      {
        header: 'API+writer CPU ms/order',
        value: (r: Run) => num(perOrder(r.serviceCpuSeconds * 1000, r), 3),
        align: 'right',
      },
    ],
    runs,
  );

  const rows = runs.slice(1).flatMap((r) => {
    const cpu = masters(r).reduce((a, n) => a + n.cpuSeconds, 0);
    return r.nodes.map((n) => ({
      run: r,
      node: n,
      share: n.role === 'master' ? n.cpuSeconds / cpu : Number.NaN,
    }));
  });
  printTable(
    'Per node on the cluster (commands include Lua inner calls; replicas apply the masters’ writes)',
    [
      { header: 'run', value: (x: (typeof rows)[number]) => x.run.key },
      { header: 'node', value: (x) => `${x.node.address} ${x.node.role}` },
      { header: 'cmds/order', value: (x) => num(perOrder(x.node.commands, x.run), 2), align: 'right' },
      {
        header: 'CPU ms/order',
        value: (x) => num(perOrder(x.node.cpuSeconds * 1000, x.run), 3),
        align: 'right',
      },
      {
        header: 'marginal',
        value: (x) => num(perOrder(marginalCpu(x.node) * 1000, x.run), 3),
        align: 'right',
      },
      { header: 'idle CPU %', value: (x) => num(x.node.idleCpuPerSecond * 100, 1), align: 'right' },
      {
        header: 'share of masters’ CPU',
        value: (x) => (Number.isNaN(x.share) ? '' : `${(x.share * 100).toFixed(1)} %`),
        align: 'right',
      },
    ],
    rows,
  );

  const checks: Check[] = runs.slice(1).map((r) => {
    const shares = rows.filter((x) => x.run === r && !Number.isNaN(x.share)).map((x) => x.share);
    const even = 1 / shares.length;
    const worst = Math.max(...shares.map((s) => Math.abs(s - even) / even));
    return {
      name: `${r.key}: each master's share of Redis CPU within ±${BALANCE * 100} % of even`,
      pass: shares.length === 3 && worst <= BALANCE,
      detail: `${shares.map((s) => `${(s * 100).toFixed(1)} %`).join(' / ')} (worst ${(worst * 100).toFixed(0)} % off)`,
    };
  });
  printChecks('Cluster checks', checks);
  console.log(
    `\nCost of REDIS_WAIT_REPLICAS=1 (reported): ${times(ratio(wait.perSecond, cluster.perSecond))} the orders/s, ` +
      `p50 ${ms(cluster.latency.p50)} → ${ms(wait.latency.p50)} ms, p99 ${ms(cluster.latency.p99)} → ${ms(wait.latency.p99)} ms`,
  );

  // The model: Redis work per order measured here, assumed to stay per order as the load grows.
  const singleNode = single.nodes[0] as NodeWork;
  const singleCpu = perOrder(marginalCpu(singleNode), single);
  const busiest = Math.max(...masters(cluster).map((n) => perOrder(marginalCpu(n), cluster)));
  console.log(
    `\nModel (not a measurement): Redis-bound ceiling = 1 / (marginal CPU seconds per order on the busiest Redis core).\n` +
      `  one redis-server: ${num(1 / singleCpu)} orders/s; 3 masters, each on its own core: ${num(1 / busiest)} orders/s ` +
      `(${times(singleCpu / busiest)}); M masters scale it by about M/3 while the shards and queues stay spread.\n` +
      '  It assumes the API processes, the writer and Postgres have cores of their own and keep up; on this\n' +
      '  2-core machine they share the cores with every Redis node, so total orders/s cannot grow here.',
  );
  const file = writeJson('orders-cluster', {
    runs: runs.map(({ latency, ...r }) => ({ ...r, latencyMs: { p50: latency.p50, p99: latency.p99 } })),
    checks,
    model: { singleCpuSecondsPerOrder: singleCpu, busiestMasterCpuSecondsPerOrder: busiest },
    violations,
  });
  console.log(`results: ${file}`);
}
