// One partition scenario's world: its network of namespaces, a fresh Postgres database reached from
// the namespaces through a forwarder on the bridge, its processes (each in a namespace of its own),
// and the environment they share. close() removes all of it, also after a failure.
import pg from 'pg';
import type { Place } from '../../harness/child-server.ts';
import { createTestDatabase, type TestDatabase } from '../../harness/postgres.ts';
import { ADMIN_TOKEN, type Spawned } from '../../harness/service.ts';
import { FAULT_ENV, Processes } from '../faults/lib.ts';
import { FaultProxy } from '../faults/proxy.ts';
import { type Host, Net } from './netns.ts';

/** Postgres stays on the host's loopback (PGPORT or 5432); the namespaces reach it through a forwarder. */
const PG_PORT = Number(process.env.PGPORT ?? 5432);

export interface World {
  net: Net;
  database: TestDatabase;
  /** A pool on the scenario's database, for the checks (from the root namespace). */
  pool: pg.Pool;
  procs: Processes;
  /** What every service process of the scenario runs with (beside where its Redis is). */
  env: Record<string, string>;
  /** Runs an API process or the writer in namespace `host`, with `env` on top of the world's. */
  spawn(entry: 'api' | 'worker', host: Host, env?: Record<string, string>): Promise<Spawned>;
  /** Stops `thing` (a server of the scenario) at close, after the service processes. */
  own<T extends Stoppable>(thing: T): T;
  close(): Promise<void>;
}

interface Stoppable {
  stop(): Promise<unknown>;
}

export function place(host: Host): Place {
  return { ip: host.ip, wrap: host.wrap };
}

/** The network (bridge only: the scenario adds its hosts), the database and its forwarder. */
export async function startWorld(scenario: string, env: Record<string, string>): Promise<World> {
  const net = Net.create(scenario);
  let database: TestDatabase | undefined;
  let forwarder: FaultProxy | undefined;
  try {
    database = await createTestDatabase();
    forwarder = await FaultProxy.start(PG_PORT, '127.0.0.1', net.gateway);
  } catch (err) {
    await database?.drop().catch(() => {});
    net.destroy();
    throw err;
  }
  const db = database;
  const fwd = forwarder;
  const url = new URL(db.url);
  url.hostname = net.gateway;
  url.port = String(fwd.port);
  const pool = new pg.Pool({ connectionString: db.url, max: 2, connectionTimeoutMillis: 5000 });
  pool.on('error', () => {});
  const procs = new Processes();
  const worldEnv: Record<string, string> = {
    DATABASE_URL: url.toString(),
    FLASHSALE_DEV_RUN: '1',
    ADMIN_TOKEN,
    ADMIN_AUTH_FAILURES: 'off',
    // The load's clients send no ticket (see FAULT_ENV's scenarios); the room has its own tests.
    WAITING_ROOM: 'off',
    // Admission control held open: the checks count what the faults did, not this machine's load.
    ADMISSION_LIMIT: '1024',
    ADMISSION_MIN_LIMIT: '1024',
    ADMISSION_MAX_LAG_MS: '0',
    ...FAULT_ENV,
    ...env,
  };
  const owned: Stoppable[] = [];
  let closing: Promise<void> | undefined;
  return {
    net,
    database: db,
    pool,
    procs,
    env: worldEnv,
    spawn: (entry, host, extra = {}) => procs.spawn({ env: worldEnv }, entry, extra, place(host)),
    own(thing) {
      owned.push(thing);
      return thing;
    },
    close() {
      closing ??= (async () => {
        await procs.reapAll();
        for (const thing of owned.splice(0).reverse()) await thing.stop().catch(() => {});
        await pool.end().catch(() => {});
        await fwd.close().catch(() => {});
        await db.drop().catch(() => {});
        net.destroy();
      })();
      return closing;
    },
  };
}
