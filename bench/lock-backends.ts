// Lock backends side by side (the last part of `npm run bench:locks`, or `tsx bench/lock-backends.ts`):
// Redis, etcd and ZooKeeper locks of this library against etcd3's own lock() retried and a plain
// ZooKeeper recipe, on private servers: 50 contenders (each its own client) looping acquire → release on
// one lock for a window, then uncontended acquire + release. Prints hand-offs/s, p50/p99 acquire, the
// requests each acquisition sent to its server (round trips), and the ratios to Redis.
//
// Environment: BENCH_SECONDS (window per variant, default 3), BENCH_UNCONTENDED_ITERATIONS (default
// 300), BENCH_CONTENDERS (default 50). Results also go to .bench/lock-backends.json.
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import { Etcd3 } from 'etcd3';
import zookeeper from 'node-zookeeper-client';
import { EtcdLock, LockClient, ZooKeeperLock } from '../src/lock/index.ts';
import { EtcdServer } from '../test/support/etcd-server.ts';
import { RedisServer } from '../test/support/redis-server.ts';
import { ZooKeeperServer } from '../test/support/zookeeper-server.ts';
import { environment, envNumber, writeJson } from './lib/output.ts';
import { ratio, type Summary, summarize } from './lib/stats.ts';
import { ms, num, printTable, times } from './lib/table.ts';

const SECONDS = envNumber('BENCH_SECONDS', 3);
const UNCONTENDED = Math.round(envNumber('BENCH_UNCONTENDED_ITERATIONS', 300));
const CONTENDERS = Math.round(envNumber('BENCH_CONTENDERS', 50));

/** One contender's client: acquire (waiting) then release, and close. */
interface Contender {
  lock(name: string): Promise<() => Promise<void>>;
  close(): Promise<void>;
}

interface Variant {
  label: string;
  backend: 'redis' | 'etcd' | 'zookeeper';
  connect(): Promise<Contender>;
  /** Requests the server has received so far (for round trips per acquisition). */
  requests(): Promise<number>;
}

interface Result {
  label: string;
  backend: string;
  acquisitions: number;
  handoffsPerSec: number;
  acquireMs: Summary;
  requestsPerAcquisition: number;
  uncontendedMs: Summary;
  uncontendedRequests: number;
  overlaps: number;
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
  const { connect } = await import('node:net');
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

function zkClient(server: ZooKeeperServer): Promise<zookeeper.Client> {
  const zk = zookeeper.createClient(server.connectString, { sessionTimeout: 10_000, spinDelay: 100 });
  return new Promise((resolve) => {
    zk.once('connected', () => resolve(zk));
    zk.connect();
  });
}

/**
 * The plain ZooKeeper lock many services hand-write, the counterpart of etcd3's lock() retried: create
 * one ephemeral node; when it exists, pause and try again. No queue, no order, no re-entry.
 */
async function plainZkLock(zk: zookeeper.Client, path: string): Promise<() => Promise<void>> {
  const { CreateMode, Exception } = zookeeper;
  await new Promise<void>((resolve) => zk.mkdirp(path.slice(0, path.lastIndexOf('/')), () => resolve()));
  for (;;) {
    const err = await new Promise<Error | null>((resolve) =>
      zk.create(path, null, CreateMode.EPHEMERAL, (e) => resolve(e)),
    );
    if (!err) return () => new Promise<void>((done) => zk.remove(path, -1, () => done()));
    if ((err as zookeeper.Exception).getCode?.() !== Exception.NODE_EXISTS) throw err;
    await sleep(5);
  }
}

async function run(variant: Variant): Promise<Result> {
  const name = `bench-${variant.label.replace(/\W+/g, '-')}`;
  const clients = await Promise.all(Array.from({ length: CONTENDERS }, () => variant.connect()));
  const latencies: number[] = [];
  let inside = 0;
  let overlaps = 0;
  let acquisitions = 0;
  const before = await variant.requests();
  const start = performance.now();
  const end = start + SECONDS * 1000;
  await Promise.all(
    clients.map(async (c) => {
      while (performance.now() < end) {
        const t0 = performance.now();
        const release = await c.lock(name);
        latencies.push(performance.now() - t0);
        inside += 1;
        if (inside > 1) overlaps += 1;
        acquisitions += 1;
        inside -= 1;
        await release();
      }
    }),
  );
  const elapsed = performance.now() - start;
  const requests = (await variant.requests()) - before;
  await Promise.all(clients.slice(1).map((c) => c.close()));
  const solo = clients[0] as Contender;
  const uncontended: number[] = [];
  const soloBefore = await variant.requests();
  for (let i = 0; i < UNCONTENDED; i++) {
    const t0 = performance.now();
    await (await solo.lock(`${name}-solo`))();
    uncontended.push(performance.now() - t0);
  }
  const soloRequests = ((await variant.requests()) - soloBefore) / UNCONTENDED;
  await solo.close();
  return {
    label: variant.label,
    backend: variant.backend,
    acquisitions,
    handoffsPerSec: acquisitions / (elapsed / 1000),
    acquireMs: summarize(latencies),
    requestsPerAcquisition: requests / acquisitions,
    uncontendedMs: summarize(uncontended),
    uncontendedRequests: soloRequests,
    overlaps,
  };
}

export async function runLockBackendsBench(): Promise<Result[]> {
  const redis = await RedisServer.start();
  const etcd = await EtcdServer.start();
  const zk = await ZooKeeperServer.start();
  const probe = redis.client();
  const redisRequests = async () => {
    const info = await probe.info('stats');
    return Number(/total_commands_processed:(\d+)/.exec(info)?.[1]) - 1;
  };
  const variants: Variant[] = [
    {
      label: 'redis: LockClient',
      backend: 'redis',
      requests: redisRequests,
      connect: async () => {
        const r = redis.client({ maxRetriesPerRequest: null });
        const locks = new LockClient(r);
        return {
          lock: async (name) => {
            const h = await locks.acquire(name, { leaseMs: 10_000 });
            return () => h.release();
          },
          close: async () => {
            await locks.close();
            r.disconnect();
          },
        };
      },
    },
    {
      label: 'etcd: EtcdLock',
      backend: 'etcd',
      requests: () => etcdRequests(etcd),
      connect: async () => {
        const locks = await EtcdLock.connect({ endpoints: etcd.endpoint });
        return {
          lock: async (name) => {
            const h = await locks.acquire(name, { leaseMs: 10_000 });
            return () => h.release();
          },
          close: () => locks.close(),
        };
      },
    },
    {
      label: 'etcd: etcd3 lock() retried',
      backend: 'etcd',
      requests: () => etcdRequests(etcd),
      connect: async () => {
        const client = new Etcd3({ hosts: etcd.endpoint });
        return {
          lock: async (name) => {
            for (;;) {
              const lock = client.lock(name).ttl(10);
              try {
                await lock.acquire();
                return () => lock.release();
              } catch {
                await sleep(5);
              }
            }
          },
          close: async () => client.close(),
        };
      },
    },
    {
      label: 'zookeeper: ZooKeeperLock',
      backend: 'zookeeper',
      requests: () => zkRequests(zk),
      connect: async () => {
        const locks = await ZooKeeperLock.connect({ connect: zk.connectString });
        return {
          lock: async (name) => {
            const h = await locks.acquire(name, { leaseMs: 10_000 });
            return () => h.release();
          },
          close: () => locks.close(),
        };
      },
    },
    {
      label: 'zookeeper: plain ephemeral node retried',
      backend: 'zookeeper',
      requests: () => zkRequests(zk),
      connect: async () => {
        const client = await zkClient(zk);
        return {
          lock: (name) => plainZkLock(client, `/bench-plain/${name}`),
          close: async () => client.close(),
        };
      },
    },
  ];
  const results: Result[] = [];
  try {
    for (const v of variants) {
      console.log(`lock backends: ${v.label}...`);
      results.push(await run(v));
    }
  } finally {
    probe.disconnect();
    await Promise.all([redis.stop(), etcd.stop(), zk.stop()]);
  }
  const base = results[0] as Result;
  printTable(
    `Lock backends: ${CONTENDERS} contenders on one lock in one process, ${SECONDS} s each; then ${UNCONTENDED} uncontended acquire+release`,
    [
      { header: 'variant', value: (r: Result) => r.label, align: 'left' },
      { header: 'hand-offs/s', value: (r) => num(r.handoffsPerSec) },
      { header: 'vs Redis', value: (r) => times(ratio(r.handoffsPerSec, base.handoffsPerSec)) },
      { header: 'acquire p50', value: (r) => ms(r.acquireMs.p50) },
      { header: 'acquire p99', value: (r) => ms(r.acquireMs.p99) },
      { header: 'requests/acq', value: (r) => num(r.requestsPerAcquisition, 1) },
      { header: 'solo p50', value: (r) => ms(r.uncontendedMs.p50) },
      { header: 'solo p99', value: (r) => ms(r.uncontendedMs.p99) },
      { header: 'solo vs Redis', value: (r) => times(ratio(r.uncontendedMs.p50, base.uncontendedMs.p50)) },
      { header: 'solo requests', value: (r) => num(r.uncontendedRequests, 1) },
      { header: 'overlaps', value: (r) => num(r.overlaps) },
    ],
    results,
  );
  console.log(
    'requests/acq: requests the server received per acquisition (Redis commands, etcd gRPC messages incl. keep-alives and watch creates, ZooKeeper packets incl. pings), waits included; solo: one client, no contention.',
  );
  writeJson('lock-backends.json', {
    environment: environment(),
    seconds: SECONDS,
    contenders: CONTENDERS,
    results,
  });
  return results;
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const results = await runLockBackendsBench();
  process.exit(results.some((r) => r.overlaps > 0 && !r.label.includes('plain')) ? 1 : 0);
}
