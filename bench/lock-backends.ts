// Lock backends side by side (`npm run bench:lock-backends`, also the last part of `npm run bench:locks`):
// this library's Redis, etcd and ZooKeeper locks, and next to each of the last two its peer (etcd3's
// own lock() retried, a plain ZooKeeper ephemeral node retried), on private servers. The contention
// setup is bench:locks' own (bench/lock-phases.ts): 50 contenders, each with its own client, over 2 and
// then 10 processes, acquire → INCR (in Redis: the global order) → release for a window. Then
// uncontended acquire + release in this process. Prints hand-offs/s, p50/p99 acquire, the requests
// each acquisition cost its lock server (round trips), and the ratios to Redis and to the peer.
//
// Environment: BENCH_SECONDS (window per variant and process count, default 3),
// BENCH_UNCONTENDED_ITERATIONS (default 200). Results also go to .bench/lock-backends.json.
import { connect } from 'node:net';
import { performance } from 'node:perf_hooks';
import { Redis } from 'ioredis';
import { EtcdServer } from '../harness/etcd-server.ts';
import { RedisServer } from '../harness/redis-server.ts';
import { ZooKeeperServer } from '../harness/zookeeper-server.ts';
import { CommandCounter } from './lib/command-counter.ts';
import { environment, envNumber, writeJson } from './lib/output.ts';
import { ratio, type Summary, summarize, sumValues } from './lib/stats.ts';
import { ms, num, printTable, times } from './lib/table.ts';
import { BACKEND_LIBS, createAdapter, LIB_LABELS, type LibName, type LockServers } from './lock-adapters.ts';
import {
  aggregate,
  CONTENDERS,
  type ContenderWorker,
  type PhaseResult,
  PROCESS_COUNTS,
  runPhase,
  startWorkers,
} from './lock-phases.ts';

const SECONDS = envNumber('BENCH_SECONDS', 3);
const UNCONTENDED = Math.round(envNumber('BENCH_UNCONTENDED_ITERATIONS', 200));

type Lib = (typeof BACKEND_LIBS)[number];

/** Each variant's lock server, whether it is this library, and the peer it is measured against. */
const VARIANTS: Record<Lib, { backend: 'redis' | 'etcd' | 'zookeeper'; ours: boolean; peer?: Lib }> = {
  flashsale: { backend: 'redis', ours: true },
  etcd: { backend: 'etcd', ours: true, peer: 'etcd3-lock' },
  'etcd3-lock': { backend: 'etcd', ours: false },
  zookeeper: { backend: 'zookeeper', ours: true, peer: 'zookeeper-plain' },
  'zookeeper-plain': { backend: 'zookeeper', ours: false },
};

/** Overlapping critical sections of this library's locks (must be 0; the peers' are only reported). */
export function countOurOverlaps(results: PhaseResult[]): number {
  return results.filter((r) => VARIANTS[r.lib as Lib]?.ours).reduce((n, r) => n + r.overlaps, 0);
}

interface UncontendedResult {
  lib: LibName;
  label: string;
  latencyMs: Summary;
  /** Requests the lock server received per acquire + release. */
  requests: number;
}

/** etcd's gRPC requests (unary calls and stream messages) from its Prometheus endpoint. */
async function etcdRequests(server: EtcdServer): Promise<number> {
  const text = await (await fetch(`${server.endpoint}/metrics`)).text();
  let n = 0;
  for (const m of text.matchAll(/^grpc_server_msg_received_total\{[^}]*\} (\S+)$/gm)) n += Number(m[1]);
  return n;
}

/** ZooKeeper's packets received (the `srvr` four-letter word; pings included). */
async function zkRequests(server: ZooKeeperServer): Promise<number> {
  const out = await new Promise<string>((resolve) => {
    let text = '';
    const socket = connect(server.port, '127.0.0.1', () => socket.write('srvr'));
    socket.on('data', (d) => {
      text += String(d);
    });
    socket.on('close', () => resolve(text));
    socket.on('error', () => resolve(''));
  });
  return Number(/Received: (\d+)/.exec(out)?.[1] ?? Number.NaN);
}

/** Uncontended acquire + release, one client of the variant in this process, on a lock of its own. */
async function uncontended(
  lib: Lib,
  url: string,
  servers: LockServers,
  requests: (() => Promise<number>) | undefined,
  counter: CommandCounter,
): Promise<UncontendedResult> {
  const redis = new Redis(url);
  redis.on('error', () => {});
  const adapter = createAdapter(lib, redis, `bench-solo-${lib}`, 0, servers);
  const signal = new AbortController().signal;
  const latencies: number[] = [];
  try {
    await adapter.warmUp();
    const before = await requests?.();
    counter.start();
    for (let i = 0; i < UNCONTENDED; i++) {
      const t0 = performance.now();
      await (await adapter.acquire(signal))();
      latencies.push(performance.now() - t0);
    }
    const redisCommands = sumValues(counter.stop().counted);
    const sent = requests ? (await requests()) - (before ?? 0) : redisCommands;
    return { lib, label: LIB_LABELS[lib], latencyMs: summarize(latencies), requests: sent / UNCONTENDED };
  } finally {
    await adapter.close();
    redis.disconnect();
  }
}

export async function runLockBackendsBench(): Promise<{
  contended: PhaseResult[];
  uncontended: UncontendedResult[];
}> {
  const redis = await RedisServer.start();
  const etcd = await EtcdServer.start();
  const zk = await ZooKeeperServer.start();
  const admin = redis.client();
  const servers: LockServers = { etcd: etcd.endpoint, zookeeper: zk.connectString };
  const requestsOf = (lib: Lib) =>
    ({
      redis: undefined,
      etcd: () => etcdRequests(etcd),
      zookeeper: () => zkRequests(zk),
    })[VARIANTS[lib].backend];
  let workers: ContenderWorker[] = [];
  const contended: PhaseResult[] = [];
  const solo: UncontendedResult[] = [];
  try {
    for (const processes of PROCESS_COUNTS) {
      workers = await startWorkers(processes);
      const rows: PhaseResult[] = [];
      for (const lib of BACKEND_LIBS) {
        process.stdout.write(`  lock backends: ${processes} processes, ${LIB_LABELS[lib]} ... `);
        const requests = requestsOf(lib);
        const lockServer = requests ? { servers, requests } : undefined;
        const round = await runPhase(workers, admin, redis.url, lib, processes, 0, SECONDS, lockServer);
        rows.push(aggregate(lib, processes, 0, [round]));
        console.log(`${num(rows.at(-1)?.handoffsPerSec)} hand-offs/s`);
      }
      await Promise.all(workers.map((w) => w.stop()));
      workers = [];
      printContended(processes, rows);
      contended.push(...rows);
    }
    const counter = new CommandCounter().install();
    for (const lib of BACKEND_LIBS)
      solo.push(await uncontended(lib, redis.url, servers, requestsOf(lib), counter));
    printUncontended(solo);
  } finally {
    await Promise.all(workers.map((w) => w.stop()));
    await Promise.all([redis.stop(), etcd.stop(), zk.stop()]);
  }
  console.log(
    'requests/acq: requests the lock server received per acquisition, waits included: Redis commands the clients sent (a script call is one), etcd gRPC messages (keep-alives and watch creates included), ZooKeeper packets (pings included).',
  );
  writeJson('lock-backends.json', {
    environment: environment(),
    seconds: SECONDS,
    contenders: CONTENDERS,
    uncontendedIterations: UNCONTENDED,
    contended,
    uncontended: solo,
  });
  return { contended, uncontended: solo };
}

function printContended(processes: number, rows: PhaseResult[]): void {
  const redis = rows.find((r) => r.lib === 'flashsale');
  const peerOf = (r: PhaseResult) => rows.find((p) => p.lib === VARIANTS[r.lib as Lib].peer);
  printTable(
    `=== lock backends: ${CONTENDERS} contenders over ${processes} processes, ${SECONDS} s each ===`,
    [
      { header: 'variant', value: (r: PhaseResult) => r.label, align: 'left' },
      { header: 'hand-offs/s', value: (r) => num(r.handoffsPerSec) },
      { header: 'vs Redis', value: (r) => times(ratio(r.handoffsPerSec, redis?.handoffsPerSec ?? 0)) },
      {
        header: 'vs peer',
        value: (r) => {
          const peer = peerOf(r);
          return peer ? times(ratio(r.handoffsPerSec, peer.handoffsPerSec)) : '';
        },
      },
      { header: 'p50 ms', value: (r) => ms(r.latencyMs.p50) },
      { header: 'p99 ms', value: (r) => ms(r.latencyMs.p99) },
      { header: 'max wait ms', value: (r) => ms(r.maxWaitMs) },
      { header: 'requests/acq', value: (r) => num(r.lockRequestsPerAcquisition, 1) },
      { header: 'errors', value: (r) => num(r.errors) },
      { header: 'overlaps', value: (r) => num(r.overlaps) },
    ],
    rows,
  );
}

function printUncontended(rows: UncontendedResult[]): void {
  const redis = rows.find((r) => r.lib === 'flashsale');
  printTable(
    `=== lock backends: uncontended acquire + release, one client, ${UNCONTENDED} iterations ===`,
    [
      { header: 'variant', value: (r: UncontendedResult) => r.label, align: 'left' },
      { header: 'p50 ms', value: (r) => ms(r.latencyMs.p50) },
      { header: 'p99 ms', value: (r) => ms(r.latencyMs.p99) },
      { header: 'p50 vs Redis', value: (r) => times(ratio(r.latencyMs.p50, redis?.latencyMs.p50 ?? 0)) },
      { header: 'requests', value: (r) => num(r.requests, 1) },
    ],
    rows,
  );
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const { contended } = await runLockBackendsBench();
  process.exit(countOurOverlaps(contended) > 0 ? 1 : 0);
}
