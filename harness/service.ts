// The service under test on private infrastructure (a redis-server and a fresh Postgres database):
// in this process (startService), or as a child process that dies with the test (spawnService).
import assert from 'node:assert/strict';
import type { ChildProcess } from 'node:child_process';
import type { AddressInfo } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Redis } from 'ioredis';
import pg from 'pg';
import { startApi } from '../src/boot/api.ts';
import { boot, type Runtime } from '../src/boot/boot.ts';
import { shutdown } from '../src/boot/shutdown.ts';
import { startWorker } from '../src/boot/worker.ts';
import { until } from './async.ts';
import { LOOPBACK, type Place, spawnAt } from './child-server.ts';
import { signalGroup } from './cleanup.ts';
import { checkAnswer } from './openapi-contract.ts';
import { createTestDatabase, type TestDatabase } from './postgres.ts';
import { freePort, RedisServer } from './redis-server.ts';

export const ADMIN_TOKEN = 'test-admin-token-0123456789';

/**
 * What a service on a test infrastructure runs with, beside where its Redis and Postgres are: a
 * development run (BUYER_AUTH defaults to none, the body's userId is the buyer) unless a test says otherwise.
 */
export const BASE_SERVICE_ENV: Record<string, string> = {
  FLASHSALE_DEV_RUN: '1',
  ADMIN_TOKEN,
  QUEUE_SECRET: 'test-queue-secret-0123456789abcdefghij',
  // Bad-input tests send many wrong admin tokens from one address; the brake has its own test
  // (test/security.admin-door.test.ts), which sets it.
  ADMIN_AUTH_FAILURES: 'off',
  LOG_LEVEL: 'silent',
  PORT: '0',
  HOST: '127.0.0.1',
};

/**
 * For tests (not benchmarks or load runs): admission control held open (no cut, no lag shedding). On
 * a loaded test machine it would shed some orders of any storm, and a test counting answers would
 * count the machine's load, not what it exercises. Admission control has tests of its own
 * (test/overload.*), which set ADMISSION_* themselves.
 */
export const NO_LOAD_SHEDDING: Record<string, string> = {
  ADMISSION_LIMIT: '1024',
  ADMISSION_MIN_LIMIT: '1024',
  ADMISSION_MAX_LAG_MS: '0',
};

export interface Infra {
  redis: RedisServer;
  database: TestDatabase;
  env: Record<string, string>;
  /** A client on the private Redis for assertions. */
  client: Redis;
  /** A pool on the private database for assertions (closed by stop()). */
  pool: pg.Pool;
  /** Rows in the orders table (optionally of one product). */
  rows(productId?: string): Promise<number>;
  stop(): Promise<void>;
}

/**
 * Child services spawned on an infrastructure, by its Redis server (`infra` may be a suite's handle,
 * a stand-in): they must not outlive it, also when a failed test left them running.
 */
const spawnedOn = new WeakMap<object, Set<Spawned>>();

/** Kills the services spawned on the infrastructure of `env` (they must not outlive it). */
export async function killSpawned(env: object): Promise<void> {
  await Promise.all([...(spawnedOn.get(env) ?? [])].map((s) => s.kill()));
}

/** What a service needs of its infrastructure: the environment that points it there. */
export type ServiceInfra = Pick<Infra, 'env'>;

/** Rows in the orders table (optionally of one product). */
export async function countRows(pool: pg.Pool, productId?: string): Promise<number> {
  const r = productId
    ? await pool.query('select count(*)::int as n from orders where product_id = $1', [productId])
    : await pool.query('select count(*)::int as n from orders');
  return (r.rows[0] as { n: number }).n;
}

export async function startInfra(extraEnv: Record<string, string> = {}): Promise<Infra> {
  const redis = await RedisServer.start();
  const database = await createTestDatabase();
  const env = {
    REDIS_URL: redis.url,
    DATABASE_URL: database.url,
    ...BASE_SERVICE_ENV,
    ...extraEnv,
  };
  const pool = new pg.Pool({ connectionString: database.url, max: 2 });
  // DROP DATABASE … WITH (FORCE) at stop may cut a connection the pool is still closing.
  pool.on('error', () => {});
  return {
    redis,
    database,
    env,
    client: redis.client(),
    pool,
    rows: (productId?: string) => countRows(pool, productId),
    async stop() {
      await killSpawned(env);
      await pool.end();
      await redis.stop();
      await database.drop();
    },
  };
}

export interface Service {
  url: string;
  rt: Runtime;
  stop(): Promise<void>;
}

/** API + writer + sweeper in this process, like `npm start`. */
export async function startService(infra: ServiceInfra, env: Record<string, string> = {}): Promise<Service> {
  const rt = await boot('test', { ...infra.env, ...env });
  await startWorker(rt);
  const server = await startApi(rt);
  const port = (server.address() as AddressInfo).port;
  return { url: `http://127.0.0.1:${port}`, rt, stop: () => shutdown(rt) };
}

export interface Spawned {
  url: string;
  proc: ChildProcess;
  output(): string;
  /** SIGKILL: no shutdown hooks run. */
  kill(): Promise<void>;
  /** SIGTERM and wait for exit. */
  stop(): Promise<number | null>;
}

/**
 * Runs src/<entry>.ts (or `script` with its arguments, an entry point of the same kind) as a child
 * process at `place` (default: loopback; in a network namespace it listens on that address);
 * resolves once /healthz answers (or the worker is up).
 */
export async function spawnService(
  infra: ServiceInfra,
  entry: 'main' | 'api' | 'worker',
  env: Record<string, string> = {},
  [script, ...args]: [string, ...string[]] = [`src/${entry}.ts`],
  place: Place = LOOPBACK,
): Promise<Spawned> {
  const port = await freePort();
  let out = '';
  const where = place === LOOPBACK ? {} : { HOST: place.ip };
  const proc = spawnAt(
    place,
    process.execPath,
    ['--import', 'tsx', script, ...args],
    {
      env: { ...process.env, ...infra.env, PORT: String(port), LOG_LEVEL: 'info', ...where, ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    },
    script,
  );
  proc.stdout?.on('data', (d: Buffer) => {
    out += d.toString();
  });
  proc.stderr?.on('data', (d: Buffer) => {
    out += d.toString();
  });
  const exited = new Promise<number | null>((resolve) => proc.once('exit', (code) => resolve(code)));
  const url = `http://${place.ip}:${port}`;
  try {
    await until(
      `${entry} to start`,
      async () => {
        if (proc.exitCode !== null) throw new Error(`${entry} exited at start: ${out}`);
        return entry === 'worker'
          ? out.includes('writer, sweeper and admin-change recovery started')
          : healthy(url);
      },
      { timeoutMs: 60_000, everyMs: 50, describe: () => out },
    );
  } catch (err) {
    signalGroup(proc, 'SIGKILL');
    throw err;
  }
  const spawned: Spawned = {
    url,
    proc,
    output: () => out,
    async kill() {
      if (proc.exitCode === null && proc.signalCode === null) signalGroup(proc, 'SIGKILL');
      await exited;
    },
    async stop() {
      if (proc.exitCode === null && proc.signalCode === null) proc.kill('SIGTERM');
      return exited;
    },
  };
  const siblings = spawnedOn.get(infra.env) ?? new Set<Spawned>();
  spawnedOn.set(infra.env, siblings.add(spawned));
  void exited.then(() => siblings.delete(spawned));
  return spawned;
}

async function healthy(url: string): Promise<boolean> {
  try {
    return (await fetch(`${url}/healthz`)).ok;
  } catch {
    return false;
  }
}

export interface Reply {
  status: number;
  /** The parsed JSON body; `{ raw }` when the body is not JSON, `{}` when there is none. */
  body: Record<string, unknown>;
  headers: Headers;
}

/** JSON request helper: returns status, parsed body and headers. */
export async function call(
  url: string,
  method: string,
  path: string,
  body?: unknown,
  headers: Record<string, string> = {},
): Promise<Reply> {
  const res = await fetch(`${url}${path}`, {
    method,
    headers: { 'content-type': 'application/json', ...headers },
    body: body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body),
  });
  const text = await res.text();
  // Every answer a test receives must be one the OpenAPI document describes (harness/openapi-contract.ts).
  checkAnswer(method, path, { status: res.status, headers: res.headers, text });
  return replyOf(res, text);
}

/**
 * POST /api/orders as a well-behaved client: an order answered 429 queued comes back with its ticket
 * after retryAfterMs; one answered 429 busy (a lock wait past LOCK_WAIT_MS
 * on a busy machine, or admission control where a test turns it on) is sent again after a jittered,
 * growing pause, up to `tries` times; returns the final answer. A busy order touched nothing, so
 * sending it again is safe. For tests that assert the raw answer (a 503, a 409 of a kind); a buyer that
 * only wants its order follows the whole protocol through the client (harness/buyers.ts).
 */
export async function placeOrder(
  url: string,
  body: unknown,
  headers: Record<string, string> = {},
  tries = 200,
): Promise<Reply> {
  let ticket: Record<string, string> = {};
  for (let attempt = 1; ; attempt++) {
    const r = await call(url, 'POST', '/api/orders', body, { ...headers, ...ticket });
    if (r.status === 429 && r.body.error === 'queued' && attempt < tries) {
      // The waiting room's protocol: keep the ticket, come back when told.
      ticket = { 'queue-ticket': String(r.body.ticket) };
      await sleep(Number(r.body.retryAfterMs));
      continue;
    }
    if (r.status !== 429 || r.body.error !== 'busy' || attempt >= tries) return r;
    // Exponential back-off with jitter, as the README tells clients (shorter than Retry-After, to keep
    // tests quick): a storm of buyers retrying at a fixed pace would keep a loaded machine shedding.
    await sleep(Math.min(1000, 10 * 2 ** Math.min(attempt, 7)) * (0.5 + Math.random()));
  }
}

/** Reads a response as status, parsed body and headers. */
export async function reply(res: Response): Promise<Reply> {
  return replyOf(res, await res.text());
}

function replyOf(res: Response, text: string): Reply {
  let parsed: Record<string, unknown> = {};
  try {
    parsed = text ? (JSON.parse(text) as Record<string, unknown>) : {};
  } catch {
    parsed = { raw: text };
  }
  return { status: res.status, body: parsed, headers: res.headers };
}

export const admin = { authorization: `Bearer ${ADMIN_TOKEN}` };

/** Creates a sale (PUT /admin/products/:id), asserting 201 Created; returns its generation. */
export async function createSale(
  url: string,
  productId: string,
  spec: Record<string, unknown>,
): Promise<number> {
  const r = await call(url, 'PUT', `/admin/products/${productId}`, spec, admin);
  assert.equal(r.status, 201, JSON.stringify(r.body));
  return r.body.generation as number;
}

/** Waits until the writer has persisted every reservation of the product (reserved == 0). */
export async function drained(
  url: string,
  productId: string,
  timeoutMs = 60_000,
): Promise<Record<string, unknown>> {
  let last: Reply | undefined;
  return until(
    `${productId} drained`,
    async () => {
      last = await call(url, 'GET', `/admin/products/${productId}`, undefined, admin);
      return last.status === 200 && last.body.reserved === 0 ? last.body : undefined;
    },
    { timeoutMs, everyMs: 50, describe: () => JSON.stringify(last?.body) },
  );
}
