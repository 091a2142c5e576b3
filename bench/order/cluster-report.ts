// The cluster mode's report (BENCH_REDIS=cluster, bench/order/cluster.ts): the runs side by side, the
// work per node, each master's share of the CPU, the cost of the WAIT and a model of the ceiling.
import type { Redis } from 'ioredis';
import { writeJson } from '../lib/output.ts';
import type { CommandCounts } from '../lib/redis-info.ts';
import { ratio, type Summary } from '../lib/stats.ts';
import { type Check, ms, num, printChecks, printTable, times } from '../lib/table.ts';
import type { Violation } from './checks.ts';

/** Each master's share of the masters' Redis CPU must be within this fraction of an even share. */
const BALANCE = 0.25;

/** A Redis node whose work is counted: its address, role and a plain client on it. */
export interface CountedNode {
  address: string;
  role: 'master' | 'replica' | 'single';
  client: Redis;
}

/** A Redis node's work during one run. */
export interface NodeWork {
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
export const marginalCpu = (n: NodeWork) => n.cpuSeconds - n.idleCpuPerSecond * n.wallSeconds;

export interface Run {
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

const masters = (run: Run) => run.nodes.filter((n) => n.role === 'master');
const perOrder = (n: number, run: Run) => n / Math.max(1, run.accepted);

/** Sum over the nodes that take commands (the single server, or the masters) of `f`, per order, in ms. */
const servingMs = (r: Run, f: (n: NodeWork) => number) =>
  perOrder(r.nodes.filter((n) => n.role !== 'replica').reduce((a, n) => a + f(n), 0) * 1000, r);

function printRuns(runs: Run[], single: Run): void {
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
}

interface NodeRow {
  run: Run;
  node: NodeWork;
  /** Of the masters' CPU in its run (NaN for a replica). */
  share: number;
}

function nodeRows(runs: Run[]): NodeRow[] {
  return runs.slice(1).flatMap((r) => {
    const cpu = masters(r).reduce((a, n) => a + n.cpuSeconds, 0);
    return r.nodes.map((n) => ({
      run: r,
      node: n,
      share: n.role === 'master' ? n.cpuSeconds / cpu : Number.NaN,
    }));
  });
}

function printNodes(rows: NodeRow[]): void {
  printTable(
    'Per node on the cluster (commands include Lua inner calls; replicas apply the masters’ writes)',
    [
      { header: 'run', value: (x: NodeRow) => x.run.key },
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
}

function balanceChecks(runs: Run[], rows: NodeRow[]): Check[] {
  return runs.slice(1).map((r) => {
    const shares = rows.filter((x) => x.run === r && !Number.isNaN(x.share)).map((x) => x.share);
    const even = 1 / shares.length;
    const worst = Math.max(...shares.map((s) => Math.abs(s - even) / even));
    return {
      name: `${r.key}: each master's share of Redis CPU within ±${BALANCE * 100} % of even`,
      pass: shares.length === 3 && worst <= BALANCE,
      detail: `${shares.map((s) => `${(s * 100).toFixed(1)} %`).join(' / ')} (worst ${(worst * 100).toFixed(0)} % off)`,
    };
  });
}

/** The cost of the WAIT, and a model of the Redis-bound ceiling; returns the model's figures. */
function printCosts(single: Run, cluster: Run, wait: Run) {
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
  return { singleCpuSecondsPerOrder: singleCpu, busiestMasterCpuSecondsPerOrder: busiest };
}

/** Prints the cluster mode's tables, checks and model; writes .bench/orders-cluster.json. */
export function reportCluster(runs: Run[], violations: Violation[]): void {
  const [single, cluster, wait] = runs as [Run, Run, Run];
  printRuns(runs, single);
  const rows = nodeRows(runs);
  printNodes(rows);
  const checks = balanceChecks(runs, rows);
  printChecks('Cluster checks', checks);
  const model = printCosts(single, cluster, wait);
  const file = writeJson('orders-cluster', {
    runs: runs.map(({ latency, ...r }) => ({ ...r, latencyMs: { p50: latency.p50, p99: latency.p99 } })),
    checks,
    model,
    violations,
  });
  console.log(`results: ${file}`);
}
