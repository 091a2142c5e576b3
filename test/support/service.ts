// The service under test, on private infrastructure: a private redis-server and a fresh Postgres
// database per test file. `startService` runs API + writer in this process (fast, inspectable);
// `spawnService` runs an entry point as a real child process (for kill -9 and restart scenarios).
import assert from 'node:assert/strict';
import { type ChildProcess, spawn } from 'node:child_process';
import type { AddressInfo } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Redis } from 'ioredis';
import pg from 'pg';
import { boot, type Runtime, shutdown, startApi, startWorker } from '../../src/runtime.ts';
import { createTestDatabase, type TestDatabase } from './postgres.ts';
import { freePort, RedisServer } from './redis-server.ts';

export const ADMIN_TOKEN = 'test-admin-token-0123456789';

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

export async function startInfra(extraEnv: Record<string, string> = {}): Promise<Infra> {
  const redis = await RedisServer.start();
  const database = await createTestDatabase();
  const env = {
    REDIS_URL: redis.url,
    DATABASE_URL: database.url,
    ADMIN_TOKEN,
    LOG_LEVEL: 'silent',
    PORT: '0',
    HOST: '127.0.0.1',
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
    async rows(productId?: string) {
      const r = productId
        ? await pool.query('select count(*)::int as n from orders where product_id = $1', [productId])
        : await pool.query('select count(*)::int as n from orders');
      return (r.rows[0] as { n: number }).n;
    },
    async stop() {
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
export async function startService(infra: Infra, env: Record<string, string> = {}): Promise<Service> {
  const rt = await boot('test', { ...infra.env, ...env });
  startWorker(rt);
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

/** Runs src/<entry>.ts as a child process; resolves once /healthz answers (or the worker is up). */
export async function spawnService(
  infra: Infra,
  entry: 'main' | 'api' | 'worker',
  env: Record<string, string> = {},
): Promise<Spawned> {
  const port = await freePort();
  let out = '';
  const proc = spawn(process.execPath, ['--import', 'tsx', `src/${entry}.ts`], {
    env: { ...process.env, ...infra.env, PORT: String(port), LOG_LEVEL: 'info', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  proc.stdout?.on('data', (d: Buffer) => {
    out += d.toString();
  });
  proc.stderr?.on('data', (d: Buffer) => {
    out += d.toString();
  });
  const exited = new Promise<number | null>((resolve) => proc.once('exit', (code) => resolve(code)));
  const url = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + 30_000;
  for (;;) {
    if (proc.exitCode !== null) throw new Error(`${entry} exited at start: ${out}`);
    if (
      entry === 'worker'
        ? out.includes('writer, sweeper and admin-change recovery started')
        : await healthy(url)
    )
      break;
    if (Date.now() > deadline) {
      proc.kill('SIGKILL');
      throw new Error(`${entry} did not start: ${out}`);
    }
    await sleep(50);
  }
  return {
    url,
    proc,
    output: () => out,
    async kill() {
      if (proc.exitCode === null && proc.signalCode === null) proc.kill('SIGKILL');
      await exited;
    },
    async stop() {
      if (proc.exitCode === null && proc.signalCode === null) proc.kill('SIGTERM');
      return exited;
    },
  };
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
  return reply(res);
}

/** Reads a response as status, parsed body and headers. */
export async function reply(res: Response): Promise<Reply> {
  const text = await res.text();
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
  timeoutMs = 30_000,
): Promise<Record<string, unknown>> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const r = await call(url, 'GET', `/admin/products/${productId}`, undefined, admin);
    if (r.status === 200 && r.body.reserved === 0) return r.body;
    if (Date.now() > deadline) throw new Error(`not drained: ${JSON.stringify(r.body)}`);
    await sleep(50);
  }
}
