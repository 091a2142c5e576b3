// `npm start` on a bare machine (issue 43): a development run whose default Redis and Postgres do
// not answer starts a private redis-server and an embedded PostgreSQL, takes an order, and stops them
// with itself; without redis-server one line names it; outside a development run nothing starts.
// Each start runs in a network namespace of its own, where nothing listens on 127.0.0.1.
import assert from 'node:assert/strict';
import type { ChildProcess } from 'node:child_process';
import { execFileSync } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { until, withTimeout } from '../../harness/async.ts';
import { signalGroup, spawnOwned } from '../../harness/cleanup.ts';
import { findExecutable } from '../../src/boot/dev/executable.ts';
import { type Host, Net, unsupported } from '../partitions/netns.ts';

const skip = unsupported();
const IP = findExecutable('ip') ?? 'ip';
const PORT = 3000;
const DEV_TOKEN = { authorization: 'Bearer dev-admin-token', 'content-type': 'application/json' };

interface Run {
  proc: ChildProcess;
  out: () => string;
  closed: Promise<{ code: number | null; stderr: string }>;
}

/** src/main.ts inside `host`'s namespace, with none of the runner's REDIS_URL/DATABASE_URL/NODE_ENV. */
function startMain(host: Host, dataDir: string, env: Record<string, string>): Run {
  const base = Object.fromEntries(
    Object.entries(process.env).filter(
      ([k]) => !/^(REDIS_|DATABASE_URL|NODE_ENV|PORT|HOST|LOG_LEVEL)/.test(k),
    ),
  );
  const proc = spawnOwned(
    // By its path: the child's PATH may lack ip (and redis-server), on purpose.
    IP,
    [...host.wrap.slice(1), process.execPath, '--import', 'tsx', 'src/main.ts'],
    {
      env: { ...base, FLASHSALE_DEV_DATA: dataDir, PORT: String(PORT), LOG_LEVEL: 'warn', ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    },
    'src/main.ts',
  );
  let stdout = '';
  let stderr = '';
  proc.stdout?.on('data', (d: Buffer) => {
    stdout += d.toString();
  });
  proc.stderr?.on('data', (d: Buffer) => {
    stderr += d.toString();
  });
  const closed = new Promise<{ code: number | null; stderr: string }>((resolve) =>
    proc.once('close', (code) => resolve({ code, stderr })),
  );
  return { proc, out: () => stdout, closed };
}

/** A fresh data folder the OS user `postgres` may enter (the embedded server runs as it when we are root). */
function dataDir(): string {
  const dir = mkdtempSync(join(os.tmpdir(), 'flashsale-dev-'));
  chmodSync(dir, 0o755);
  return dir;
}

async function call(host: Host, method: string, path: string, body?: unknown, headers = {}) {
  const res = await fetch(`http://${host.ip}:${PORT}${path}`, {
    method,
    headers: { 'content-type': 'application/json', ...headers },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
}

/** Waits until the service in `host` is ready (a first start runs initdb: bounded generously, not timed). */
async function ready(host: Host): Promise<void> {
  await until(
    'the service to answer',
    async () => (await call(host, 'GET', '/readyz').catch(() => undefined))?.status === 200,
    { timeoutMs: 240_000, everyMs: 200 },
  );
}

async function orderStatus(host: Host, orderId: string): Promise<unknown> {
  return (await call(host, 'GET', `/api/orders/${orderId}`)).body.status;
}

/** SIGTERM, exit 0, and nothing it started outlives it (the namespace is empty). */
async function stop(run: Run, host: Host): Promise<void> {
  signalGroup(run.proc, 'SIGTERM');
  const exit = await withTimeout(run.closed, 60_000, 'the service to stop');
  assert.equal(exit.code, 0, exit.stderr);
  await until('the namespace to be empty', () => pidsIn(host).length === 0, { everyMs: 50 });
}

/** The processes still running in the namespace (the service and whatever it started). */
function pidsIn(host: Host): string[] {
  return execFileSync('ip', ['netns', 'pids', host.ns], { encoding: 'utf8' }).split('\n').filter(Boolean);
}

describe('development run on a bare machine', { skip }, () => {
  let net: Net;
  const dirs: string[] = [];
  before(() => {
    net = Net.create('s');
  });
  after(() => {
    net?.destroy();
    for (const d of dirs) rmSync(d, { recursive: true, force: true });
  });

  it('starts a private redis-server and an embedded PostgreSQL, takes an order, stops them with itself', async () => {
    const host = net.host('bare');
    const dir = dataDir();
    dirs.push(dir);
    const first = startMain(host, dir, { FLASHSALE_DEV_RUN: '1' });
    let orderId = '';
    try {
      await ready(host);
      const lines = first
        .out()
        .split('\n')
        .filter((l) => l.startsWith('flashsale: '));
      assert.equal(lines.length, 2, first.out());
      assert.match(
        lines[0] as string,
        /nothing answered at 127\.0\.0\.1:6379.*private redis-server.*data in .*\/redis/,
      );
      assert.match(
        lines[1] as string,
        /nothing answered at 127\.0\.0\.1:5432.*embedded PostgreSQL.*data in .*\/postgres/,
      );
      const put = await call(host, 'PUT', '/admin/products/bare', { stock: 5, shards: 2 }, DEV_TOKEN);
      assert.equal(put.status, 201, JSON.stringify(put.body));
      const order = await call(host, 'POST', '/api/orders', {
        productId: 'bare',
        userId: 'first',
        quantity: 2,
      });
      assert.equal(order.status, 202, JSON.stringify(order.body));
      orderId = String(order.body.orderId);
      // Confirmed: its row is committed in the embedded PostgreSQL.
      await until(
        'the order to reach PostgreSQL',
        async () => (await orderStatus(host, orderId)) === 'confirmed',
        {
          everyMs: 50,
        },
      );
      assert.equal((await call(host, 'GET', '/api/products/bare')).body.available, 3);
    } finally {
      await stop(first, host);
    }
    // The next start finds the data it left (no initdb), the order and the stock as they were.
    assert.ok(existsSync(join(dir, 'postgres', 'PG_VERSION')), 'the cluster is kept for the next start');
    const second = startMain(host, dir, { FLASHSALE_DEV_RUN: '1' });
    try {
      await ready(host);
      assert.equal(await orderStatus(host, orderId), 'confirmed');
      assert.equal((await call(host, 'GET', '/api/products/bare')).body.available, 3);
    } finally {
      await stop(second, host);
    }
  });

  it('without redis-server on PATH, one line names what to install, and nothing starts', async () => {
    const host = net.host('noredis');
    const dir = dataDir();
    dirs.push(dir);
    const emptyBin = join(dir, 'bin');
    mkdirSync(emptyBin);
    const run = startMain(host, dir, { FLASHSALE_DEV_RUN: '1', PATH: emptyBin });
    const exit = await withTimeout(run.closed, 60_000, 'the refusal');
    const lines = exit.stderr.split('\n').filter((l) => l.trim() !== '');
    assert.equal(exit.code, 1, exit.stderr);
    assert.equal(lines.length, 1, exit.stderr);
    assert.match(
      lines[0] as string,
      /no Redis answers at 127\.0\.0\.1:6379 and redis-server is not installed/,
    );
    assert.match(lines[0] as string, /apt-get install redis-server/);
    assert.equal(existsSync(join(dir, 'postgres')), false, 'no PostgreSQL was started');
  });

  it('outside a development run nothing is started: the unreachable Redis is reported', async () => {
    const host = net.host('prod');
    const dir = dataDir();
    dirs.push(dir);
    const run = startMain(host, dir, {
      NODE_ENV: 'production',
      FLASHSALE_DEV_RUN: '1',
      ADMIN_TOKEN: 'a-production-admin-token-0123456789abcdef',
      QUEUE_SECRET: 'a-production-queue-secret-0123456789abcdef',
      BUYER_AUTH: 'none',
    });
    const exit = await withTimeout(run.closed, 60_000, 'the refusal');
    assert.equal(exit.code, 1, exit.stderr);
    assert.match(exit.stderr, /Redis is unreachable at redis:\/\/127\.0\.0\.1:6379/);
    assert.deepEqual([existsSync(join(dir, 'redis')), existsSync(join(dir, 'postgres'))], [false, false]);
  });
});
