// The real entry point (src/main.ts) refusing to start with one clear stderr line: unreachable Redis
// or Postgres, invalid configuration, production without a proper ADMIN_TOKEN.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { until, withTimeout } from '../harness/async.ts';
import { signalGroup, spawnOwned } from '../harness/cleanup.ts';
import { freePort } from '../harness/redis-server.ts';
import {
  ADMIN_TOKEN,
  BASE_SERVICE_ENV,
  type Infra,
  NO_LOAD_SHEDDING,
  spawnService,
  startInfra,
} from '../harness/service.ts';

interface Exit {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

/** Environment without anything of ours inherited from the test runner's own environment. */
function baseEnv(): NodeJS.ProcessEnv {
  const env = { ...process.env };
  for (const name of Object.keys(env)) {
    if (
      /^(REDIS_URL|DATABASE_URL|PORT|HOST|ADMIN_TOKEN|NODE_ENV|LOG_LEVEL|LOCK_|MAX_ORDER|WRITER_|SWEEP_|SHUTDOWN_)/.test(
        name,
      )
    ) {
      delete env[name];
    }
  }
  // Every spawned service of the suite shares the tests' ticket key, unless a case says otherwise.
  return { ...env, QUEUE_SECRET: BASE_SERVICE_ENV.QUEUE_SECRET };
}

/** Runs src/main.ts to its exit (it must exit on its own within timeoutMs, or it is killed). */
async function runMain(env: Record<string, string>, timeoutMs = 60_000): Promise<Exit> {
  const proc = spawnOwned(
    process.execPath,
    ['--import', 'tsx', 'src/main.ts'],
    // A development run unless the case says production (the test ADMIN_TOKEN is short).
    { env: { ...baseEnv(), FLASHSALE_DEV_RUN: '1', ...env }, stdio: ['ignore', 'pipe', 'pipe'] },
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
  // 'exit' may precede the last 'data' events of the pipes; 'close' comes after them.
  const closed = new Promise<Exit>((resolve) =>
    proc.once('close', (code, signal) => resolve({ code, signal, stdout, stderr })),
  );
  try {
    return await withTimeout(closed, timeoutMs, 'main exiting on its own');
  } catch (err) {
    signalGroup(proc, 'SIGKILL');
    throw new Error(`${(err as Error).message}; stdout=${stdout} stderr=${stderr}`);
  }
}

const STACK = /^\s+at .+\(?.*:\d+:\d+\)?$/m;

/** Exit 1, exactly one stderr line (no stack trace anywhere), and that line matches every pattern. */
function assertRefused(exit: Exit, ...patterns: RegExp[]): string {
  const detail = JSON.stringify(exit);
  assert.equal(exit.code, 1, detail);
  const lines = exit.stderr.split('\n').filter((l) => l.trim() !== '');
  assert.equal(lines.length, 1, `exactly one stderr line expected: ${detail}`);
  const line = lines[0] as string;
  for (const p of patterns) assert.match(line, p, detail);
  assert.doesNotMatch(exit.stderr, STACK, `stack trace on stderr: ${detail}`);
  assert.doesNotMatch(exit.stdout, STACK, `stack trace on stdout: ${detail}`);
  return line;
}

// The cases are independent child processes: run two at a time (each spends ~1.5 s of CPU loading).
describe('refusing to start', { concurrency: 2 }, () => {
  let closedPort: number;
  let infra: Infra;
  before(async () => {
    closedPort = await freePort();
    infra = await startInfra(NO_LOAD_SHEDDING);
  });

  it('Redis unreachable: exit 1 with one line naming Redis and REDIS_URL, never its password', async () => {
    const exit = await runMain({
      REDIS_URL: `redis://:secret-pw@127.0.0.1:${closedPort}`,
      DATABASE_URL: infra.env.DATABASE_URL as string,
      ADMIN_TOKEN,
      PORT: '0',
    });
    const line = assertRefused(exit, /Redis/, /REDIS_URL/, new RegExp(`127\\.0\\.0\\.1:${closedPort}`));
    assert.doesNotMatch(line, /secret-pw/, 'the password must not be printed');
  });

  it('REDIS_URL with another scheme (http://): the scheme is named, not "unreachable"', async () => {
    const exit = await runMain({
      REDIS_URL: `http://:secret-pw@127.0.0.1:${closedPort}`,
      DATABASE_URL: infra.env.DATABASE_URL as string,
      ADMIN_TOKEN,
      PORT: '0',
    });
    const line = assertRefused(exit, /REDIS_URL/, /redis:\/\//);
    assert.doesNotMatch(line, /unreachable|secret-pw/);
  });

  it('Redis Cluster unreachable: exit 1 with one line naming REDIS_CLUSTER_NODES', async () => {
    const exit = await runMain({
      REDIS_CLUSTER_NODES: `127.0.0.1:${closedPort}`,
      DATABASE_URL: infra.env.DATABASE_URL as string,
      ADMIN_TOKEN,
      PORT: '0',
    });
    assertRefused(exit, /REDIS_CLUSTER_NODES/, new RegExp(`127\\.0\\.0\\.1:${closedPort}`));
  });

  it('REDIS_URL and REDIS_CLUSTER_NODES both set: refuses, naming both (an empty REDIS_URL is unset)', async () => {
    const exit = await runMain({
      REDIS_URL: infra.env.REDIS_URL as string,
      REDIS_CLUSTER_NODES: `127.0.0.1:${closedPort}`,
      DATABASE_URL: infra.env.DATABASE_URL as string,
      ADMIN_TOKEN,
      PORT: '0',
    });
    assertRefused(exit, /REDIS_URL/, /REDIS_CLUSTER_NODES/, /not both/);
    // Empty, as docker-compose's cluster profile passes it: the cluster is what is tried.
    const empty = await runMain({
      REDIS_URL: '',
      REDIS_CLUSTER_NODES: `127.0.0.1:${closedPort}`,
      DATABASE_URL: infra.env.DATABASE_URL as string,
      ADMIN_TOKEN,
      PORT: '0',
    });
    assertRefused(empty, /REDIS_CLUSTER_NODES/);
    assert.doesNotMatch(empty.stderr, /not both/);
  });

  it('Postgres unreachable: exit 1 with one line naming Postgres and DATABASE_URL', async () => {
    const exit = await runMain({
      REDIS_URL: infra.env.REDIS_URL as string,
      DATABASE_URL: `postgres://flashsale:secret-pw@127.0.0.1:${closedPort}/flashsale`,
      ADMIN_TOKEN,
      PORT: '0',
    });
    const line = assertRefused(exit, /Postgres/, /DATABASE_URL/, new RegExp(`:${closedPort}`));
    assert.doesNotMatch(line, /secret-pw/, 'the password must not be printed');
  });

  for (const [what, url, pattern] of [
    [
      'database',
      (u: URL) => Object.assign(u, { pathname: '/flashsale_no_such_db' }),
      /database "flashsale_no_such_db" does not exist/,
    ],
    [
      'role',
      (u: URL) => Object.assign(u, { username: 'flashsale_no_such_role' }),
      /role "flashsale_no_such_role" does not exist/,
    ],
  ] as const) {
    it(`Postgres without the ${what}: one line saying so, not "start PostgreSQL"`, async () => {
      const exit = await runMain({
        REDIS_URL: infra.env.REDIS_URL as string,
        DATABASE_URL: url(new URL(infra.env.DATABASE_URL as string)).toString(),
        ADMIN_TOKEN,
        PORT: '0',
      });
      const line = assertRefused(exit, /Postgres/, pattern, /DATABASE_URL/);
      assert.doesNotMatch(line, /start PostgreSQL|unreachable/);
    });
  }

  // Every bad value's one line is checked on loadConfig itself (test/config.test.ts); these show that
  // the process prints that line and exits 1 before touching anything.
  for (const [name, value] of [
    ['PORT', 'abc'],
    ['LOCK_BACKEND', 'consul'],
  ] as const) {
    it(`invalid ${name}=${value}: exit 1 with one line naming ${name}`, async () => {
      const exit = await runMain({
        REDIS_URL: infra.env.REDIS_URL as string,
        DATABASE_URL: infra.env.DATABASE_URL as string,
        ADMIN_TOKEN,
        PORT: '0',
        [name]: value,
      });
      assertRefused(exit, new RegExp(`\\b${name}\\b`));
    });
  }

  for (const [backend, variable, value] of [
    ['etcd', 'ETCD_ENDPOINTS', 'http://127.0.0.1:PORT'],
    ['zookeeper', 'ZOOKEEPER_CONNECT', '127.0.0.1:PORT'],
  ] as const) {
    it(`LOCK_BACKEND=${backend} unreachable: exit 1 with one line naming it and ${variable}`, async () => {
      const exit = await runMain({
        REDIS_URL: infra.env.REDIS_URL as string,
        DATABASE_URL: infra.env.DATABASE_URL as string,
        ADMIN_TOKEN,
        PORT: '0',
        LOCK_BACKEND: backend,
        [variable]: value.replace('PORT', String(closedPort)),
      });
      assertRefused(exit, new RegExp(backend === 'etcd' ? 'etcd' : 'ZooKeeper'), new RegExp(variable));
    });
  }

  it('NODE_ENV=production without its secrets: one line names all three and what production needs', async () => {
    // As `NODE_ENV=production npm start` runs it: npm start sets FLASHSALE_DEV_RUN=1, production ignores it.
    const exit = await runMain({
      REDIS_URL: infra.env.REDIS_URL as string,
      DATABASE_URL: infra.env.DATABASE_URL as string,
      NODE_ENV: 'production',
      FLASHSALE_DEV_RUN: '1',
      QUEUE_SECRET: '',
      PORT: '0',
    });
    const line = assertRefused(
      exit,
      /ADMIN_TOKEN must be set/,
      /QUEUE_SECRET must be set/,
      /BUYER_AUTH must be set/,
    );
    assert.match(line, /Production needs ADMIN_TOKEN, QUEUE_SECRET \(or WAITING_ROOM=off\) and BUYER_AUTH/);
    assert.doesNotMatch(line, /FLASHSALE_DEV_RUN=1/);
  });

  it('three bad variables: one line lists the three, each with what it must be', async () => {
    const exit = await runMain({
      REDIS_URL: infra.env.REDIS_URL as string,
      DATABASE_URL: infra.env.DATABASE_URL as string,
      ADMIN_TOKEN,
      PORT: 'abc',
      LOCK_WAIT_MS: 'soon',
      LOCK_BACKEND: 'consul',
    });
    const line = assertRefused(
      exit,
      /3 problems/,
      /PORT="abc": must be an integer from 0 to 65535/,
      /LOCK_BACKEND="consul": must be one of redis, etcd, zookeeper/,
      /LOCK_WAIT_MS="soon": must be an integer from 0 to 60000/,
    );
    assert.doesNotMatch(line, /expected|received|NaN/);
  });

  it('NODE_ENV=production with the development token or a short one: refuses, naming ADMIN_TOKEN', async () => {
    const exits = await Promise.all(
      ['dev-admin-token', 'short'].map((token) =>
        runMain({
          REDIS_URL: infra.env.REDIS_URL as string,
          DATABASE_URL: infra.env.DATABASE_URL as string,
          NODE_ENV: 'production',
          ADMIN_TOKEN: token,
          PORT: '0',
        }),
      ),
    );
    for (const exit of exits) assertRefused(exit, /ADMIN_TOKEN/);
  });

  it('outside a development run, a missing or short QUEUE_SECRET: refuses, naming QUEUE_SECRET', async () => {
    const exits = await Promise.all(
      [undefined, 'short-secret'].map((secret) =>
        runMain({
          REDIS_URL: infra.env.REDIS_URL as string,
          DATABASE_URL: infra.env.DATABASE_URL as string,
          // Not a development run, with everything else it then needs.
          FLASHSALE_DEV_RUN: '',
          ADMIN_TOKEN: 'a-production-admin-token-0123456789abcdef',
          BUYER_AUTH: 'none',
          PORT: '0',
          ...(secret === undefined ? { QUEUE_SECRET: '' } : { QUEUE_SECRET: secret }),
        }),
      ),
    );
    for (const exit of exits) assertRefused(exit, /QUEUE_SECRET/);
  });

  after(async () => {
    // Every refusal above ran against this infra: none may have written to Redis or migrated Postgres.
    assert.deepEqual(await infra.client.keys('*'), [], 'a refused start wrote to Redis');
    const { default: pg } = await import('pg');
    const c = new pg.Client({ connectionString: infra.env.DATABASE_URL });
    await c.connect();
    try {
      const r = await c.query(
        "select count(*)::int as n from information_schema.tables where table_schema = 'public'",
      );
      assert.equal((r.rows[0] as { n: number }).n, 0, 'a refused start created tables');
    } finally {
      await c.end();
      await infra.stop();
    }
  });
});

describe('starting without ADMIN_TOKEN and QUEUE_SECRET', () => {
  it('the worker (no API) starts; main (the API) refuses, naming ADMIN_TOKEN', async () => {
    const infra = await startInfra();
    try {
      // Not a development run: no development token, and BUYER_AUTH unset (the API's alone to need).
      const notDev = { FLASHSALE_DEV_RUN: '' };
      const worker = await spawnService(infra, 'worker', { ...notDev, ADMIN_TOKEN: '', QUEUE_SECRET: '' });
      // Up to the end of its start (the metrics server is last), so SIGTERM meets its graceful stop.
      await until('the worker to serve /metrics', () => worker.output().includes('metrics listening'));
      assert.equal(await worker.stop(), 0, worker.output());
      const exit = await runMain({
        ...notDev,
        REDIS_URL: infra.env.REDIS_URL as string,
        DATABASE_URL: infra.env.DATABASE_URL as string,
        PORT: '0',
      });
      assertRefused(exit, /ADMIN_TOKEN/);
    } finally {
      await infra.stop();
    }
  });
});
