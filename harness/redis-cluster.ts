// A private Redis Cluster for tests: 3 masters + 3 replicas of the Debian redis-server on free ports
// (each with its bus port +10000 free too), created with redis-cli --cluster, stopped with the suite.
import { execFile } from 'node:child_process';
import { createServer } from 'node:net';
import { promisify } from 'node:util';
import { Cluster, Redis } from 'ioredis';
import pg from 'pg';
import { until } from './async.ts';
import type { Place } from './child-server.ts';
import { createTestDatabase, type TestDatabase } from './postgres.ts';
import { freePort, RedisServer } from './redis-server.ts';
import { BASE_SERVICE_ENV, countRows, killSpawned } from './service.ts';

const run = promisify(execFile);

/** `host:port` of a node. */
const address = (s: RedisServer) => `${s.place.ip}:${s.port}`;

/** Node timeout of the test cluster: a killed master's replica takes over about this long after. */
const NODE_TIMEOUT_MS = 1000;

function portFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const srv = createServer();
    srv.once('error', () => resolve(false));
    srv.listen(port, '127.0.0.1', () => srv.close(() => resolve(true)));
  });
}

/** A free port whose cluster bus port (+10000) is free too. */
export async function clusterPort(taken: Set<number>): Promise<number> {
  for (;;) {
    const port = await freePort();
    const bus = port + 10_000;
    if (bus > 65_535 || taken.has(port) || taken.has(bus) || !(await portFree(bus))) continue;
    taken.add(port).add(bus);
    return port;
  }
}

/** A cluster-enabled redis-server on `port` (at `place`, default loopback), not yet part of any cluster. */
export const startNode = (port: number, place?: Place) =>
  RedisServer.start({
    port,
    place,
    args: ['--cluster-enabled', 'yes', '--cluster-node-timeout', String(NODE_TIMEOUT_MS)],
  });

export interface ClusterNodeInfo {
  address: string;
  role: 'master' | 'slave';
  /** For a replica, the id of its master. */
  masterId: string;
  id: string;
  server: RedisServer;
}

export class RedisCluster {
  private readonly clients: (Cluster | Redis)[] = [];

  private constructor(readonly servers: RedisServer[]) {}

  /**
   * Starts 3 masters and 3 replicas and waits until every node reports cluster_state:ok. With
   * `places` (six, e.g. network namespaces of test/partitions), node k runs at places[k] on port 6379.
   */
  static async start(places?: Place[]): Promise<RedisCluster> {
    const taken = new Set<number>();
    const ports: number[] = [];
    for (let i = 0; i < 6; i++) ports.push(places ? 6379 : await clusterPort(taken));
    const servers = await Promise.all(ports.map((port, k) => startNode(port, places?.[k])));
    const cluster = new RedisCluster(servers);
    try {
      await run('redis-cli', [
        '--cluster',
        'create',
        ...servers.map(address),
        '--cluster-replicas',
        '1',
        '--cluster-yes',
      ]);
      await cluster.ready();
    } catch (err) {
      await cluster.stop();
      throw err;
    }
    return cluster;
  }

  /** Every node, as a target's seed list. */
  get nodeList(): { host: string; port: number }[] {
    return this.servers.map((s) => ({ host: s.place.ip, port: s.port }));
  }

  /** `host:port,...` of every node, as REDIS_CLUSTER_NODES. */
  get seeds(): string {
    return this.servers.map(address).join(',');
  }

  /** Waits until every live node says cluster_state:ok, all 16384 slots are served and every replica is in sync. */
  async ready(): Promise<void> {
    await until(
      'cluster_state:ok on every node',
      async () => {
        for (const s of this.servers) {
          if (!s.running) continue;
          const probe = new Redis(s.port, s.place.ip, { lazyConnect: true, maxRetriesPerRequest: 0 });
          probe.on('error', () => {});
          try {
            const info = String(await probe.call('cluster', 'info'));
            if (!info.includes('cluster_state:ok') || !info.includes('cluster_slots_ok:16384')) return false;
            // A replica that has not synced with its master cannot take over from it.
            const replication = await probe.info('replication');
            if (replication.includes('role:slave') && !replication.includes('master_link_status:up'))
              return false;
          } catch {
            return false;
          } finally {
            probe.disconnect();
          }
        }
        return true;
      },
      { timeoutMs: 60_000, everyMs: 100 },
    );
  }

  /** A cluster client closed with the cluster. */
  client(): Cluster {
    const c = new Cluster(this.nodeList, {
      redisOptions: { maxRetriesPerRequest: 1 },
      shardedSubscribers: true,
      retryDelayOnFailover: 100,
      retryDelayOnClusterDown: 100,
    });
    c.on('error', () => {});
    this.clients.push(c);
    return c;
  }

  /** The nodes as some live node (or `seenBy`) sees them now (CLUSTER NODES). */
  async nodes(seenBy?: RedisServer): Promise<ClusterNodeInfo[]> {
    const live = seenBy ?? this.servers.find((s) => s.running);
    if (!live) throw new Error('no live cluster node');
    const c = live.client();
    const text = String(await c.call('cluster', 'nodes'));
    return text
      .trim()
      .split('\n')
      .flatMap((line) => {
        const [id, addr, flags, masterId] = line.split(' ');
        const address = (addr ?? '').split('@')[0] ?? '';
        const server = this.servers.find((s) => address === `${s.place.ip}:${s.port}`);
        if (!id || !server || (flags ?? '').includes('fail') || (flags ?? '').includes('noaddr')) return [];
        const role: 'master' | 'slave' = (flags ?? '').includes('master') ? 'master' : 'slave';
        return [{ id, address, role, masterId: masterId ?? '-', server }];
      });
  }

  /** The live masters' addresses, sorted. */
  async masters(): Promise<string[]> {
    return (await this.nodes())
      .filter((n) => n.role === 'master')
      .map((n) => n.address)
      .sort();
  }

  /**
   * Kills the master at `address` (kill -9) and waits until its replica has taken over: the other
   * nodes flag it failed, three masters serve every slot again. Then, with `rejoin`, restarts it
   * (empty: no persistence) so that it comes back as the new master's replica.
   */
  async failOver(address: string, rejoin = true): Promise<void> {
    const server = this.server(address);
    await server.kill();
    await until(
      `${address}'s replica to take over`,
      async () => {
        const masters = await this.masters().catch((): string[] => []);
        return masters.length === 3 && !masters.includes(address);
      },
      { timeoutMs: 60_000, everyMs: 100 },
    );
    await this.ready();
    if (!rejoin) return;
    await server.restart();
    await until(
      `${address} to rejoin as a replica`,
      async () => (await this.nodes()).some((n) => n.address === address && n.role === 'slave'),
      { timeoutMs: 60_000, everyMs: 100 },
    );
    await this.ready();
  }

  /** The master serving `slot` now, as `host:port` (asked of the cluster, not of a client's cached map). */
  async slotOwner(slot: number): Promise<string> {
    const { owner } = await this.slotMap(slot);
    return `${owner[0]}:${owner[1]}`;
  }

  private async slotMap(slot: number) {
    const ranges = (await this.client().call('cluster', 'slots')) as [
      number,
      number,
      [string, number, string],
    ][];
    const owner = ranges.find(([start, end]) => start <= slot && slot <= end)?.[2];
    if (!owner) throw new Error(`slot ${slot} is not served`);
    return { owner, ranges };
  }

  /**
   * Moves `slot` to the master at `to` with `redis-cli --cluster reshard`, which takes a source's
   * slots lowest first: the owner's slots up to and including `slot` move, keys and all (MIGRATE),
   * while clients keep working through ASK and MOVED redirections.
   */
  async migrateSlot(slot: number, to: string): Promise<void> {
    const { owner, ranges } = await this.slotMap(slot);
    const count = ranges
      .filter(([, , node]) => node[2] === owner[2])
      .reduce((n, [start, end]) => n + Math.max(0, Math.min(end, slot) - start + 1), 0);
    const target = (await this.nodes()).find((n) => n.address === to && n.role === 'master');
    if (!target) throw new Error(`${to} is not a master`);
    await run('redis-cli', [
      '--cluster',
      'reshard',
      `${owner[0]}:${owner[1]}`,
      '--cluster-from',
      owner[2],
      '--cluster-to',
      target.id,
      '--cluster-slots',
      String(count),
      '--cluster-yes',
    ]);
  }

  /** The server at `host:port`. */
  server(address: string): RedisServer {
    const s = this.servers.find((x) => address === `${x.place.ip}:${x.port}`);
    if (!s) throw new Error(`no cluster node ${address}`);
    return s;
  }

  async stop(): Promise<void> {
    for (const c of this.clients.splice(0)) c.disconnect();
    await Promise.all(this.servers.map((s) => s.stop()));
  }
}

/** A private cluster and a fresh database: the environment `npm start` gets on a cluster. */
export interface ClusterInfra {
  cluster: RedisCluster;
  database: TestDatabase;
  env: Record<string, string>;
  client: Cluster;
  pool: pg.Pool;
  rows(productId?: string): Promise<number>;
  stop(): Promise<void>;
}

export async function startClusterInfra(extraEnv: Record<string, string> = {}): Promise<ClusterInfra> {
  const cluster = await RedisCluster.start();
  const database = await createTestDatabase();
  const pool = new pg.Pool({ connectionString: database.url, max: 2 });
  pool.on('error', () => {});
  const env = {
    REDIS_CLUSTER_NODES: cluster.seeds,
    DATABASE_URL: database.url,
    ...BASE_SERVICE_ENV,
    ...extraEnv,
  };
  return {
    cluster,
    database,
    env,
    client: cluster.client(),
    pool,
    rows: (productId?: string) => countRows(pool, productId),
    async stop() {
      await killSpawned(env);
      await pool.end();
      await cluster.stop();
      await database.drop();
    },
  };
}
