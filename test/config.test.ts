// loadConfig called directly (no process per case): defaults, sections, every refusal as one line
// naming its variable, and no secret in any message.
import assert from 'node:assert/strict';
import { resolve } from 'node:path';
import { describe, test } from 'node:test';
import { ConfigError } from '../src/config/errors.ts';
import { loadConfig, loadSection } from '../src/config/load.ts';
import { redactUrl } from '../src/config/redact.ts';

const TOKEN = 'a-long-secret-admin-token-of-32-chars';
const QUEUE_SECRET = 'a-ticket-signing-key-of-32-chars!';
const base = { ADMIN_TOKEN: TOKEN, QUEUE_SECRET, BUYER_AUTH: 'none' };

/** Asserts that `env` is refused with one line that names `variable` and matches every pattern. */
function assertRefused(env: Record<string, string>, variable: string, ...patterns: RegExp[]): string {
  let message = '';
  assert.throws(
    () => loadConfig(env),
    (err: unknown) => {
      assert.ok(err instanceof ConfigError, String(err));
      message = err.message;
      return true;
    },
  );
  assert.match(message, /^invalid configuration: /);
  assert.ok(!message.includes('\n'), message);
  assert.match(message, new RegExp(`\\b${variable}\\b`), message);
  for (const p of patterns) assert.match(message, p, message);
  return message;
}

describe('loadConfig: sections and defaults', () => {
  test('an empty environment gets every default, grouped by section', () => {
    const c = loadConfig(base);
    assert.deepEqual(c.redis, {
      url: 'redis://127.0.0.1:6379',
      clusterNodes: undefined,
      waitReplicas: 0,
      waitTimeoutMs: 500,
    });
    assert.deepEqual(c.postgres, { url: 'postgres://postgres@127.0.0.1:5432/postgres' });
    assert.deepEqual(c.http, {
      port: 3000,
      host: '0.0.0.0',
      apiWorkers: 1,
      trustProxy: false,
      maxOrderQuantity: 100,
      headersTimeoutMs: 12_000,
      requestTimeoutMs: 30_000,
      connectionsCheckMs: 1000,
      maxConnectionsPerAddress: 256,
      metricsPort: undefined,
    });
    assert.deepEqual(c.mode, { nodeEnv: 'development', devRun: false, devDataDir: resolve('.dev') });
    assert.deepEqual(c.admin, {
      token: TOKEN,
      devToken: false,
      failedAttempts: { rate: 0.1, burst: 10 },
    });
    assert.deepEqual(c.buyer, { auth: 'none' });
    assert.deepEqual(c.buyerJwt, {
      secret: undefined,
      publicKeyPem: undefined,
      issuer: undefined,
      audience: undefined,
      clockSkewSeconds: 30,
    });
    assert.deepEqual(c.payments, { webhookSecret: undefined });
    assert.deepEqual(c.log, { level: 'info' });
    assert.deepEqual(c.locks, {
      backend: 'redis',
      etcdEndpoints: ['http://127.0.0.1:2379'],
      zookeeperConnect: '127.0.0.1:2181',
      leaseMs: 5000,
      waitMs: 2000,
    });
    assert.deepEqual(c.handOff, { maxBatch: 64, maxWaitMs: 2 });
    assert.deepEqual(c.writer, {
      concurrency: 256,
      batchSize: 128,
      batchMaxWaitMs: 5,
      lockDurationMs: 10_000,
      stalledIntervalMs: 5000,
    });
    assert.deepEqual(c.lifecycle, {
      sweepAgeMs: 5000,
      sweepIntervalMs: 2000,
      reconcileIntervalMs: 30_000,
      expiryIntervalMs: 1000,
    });
    assert.deepEqual(c.shutdown, { timeoutMs: 10_000 });
    assert.deepEqual(c.rateLimits, { perUser: undefined, perAddress: undefined });
    assert.deepEqual(c.admission, {
      initialLimit: 128,
      minLimit: 8,
      maxLimit: 1024,
      targetMs: 200,
      queueMs: 1000,
      overloadQueueMs: 50,
      maxQueue: 1000,
      maxLagMs: 100,
      maxUtilization: 0.9,
    });
  });

  test('values reach their section, parsed', () => {
    const c = loadConfig({
      ...base,
      REDIS_CLUSTER_NODES: '10.0.0.1:7000, [::1]:7001',
      LOCK_BACKEND: 'etcd',
      ETCD_ENDPOINTS: 'http://a:2379,https://b:2379',
      WRITER_BATCH_SIZE: '500',
      RATE_LIMIT_PER_USER: '5:10',
      TRUST_PROXY: 'loopback, 10.0.0.0/8',
      API_WORKERS: '4',
      ADMISSION_MAX_UTILIZATION: '0.5',
    });
    assert.deepEqual(c.redis.clusterNodes, [
      { host: '10.0.0.1', port: 7000 },
      { host: '::1', port: 7001 },
    ]);
    assert.equal(c.locks.backend, 'etcd');
    assert.deepEqual(c.locks.etcdEndpoints, ['http://a:2379', 'https://b:2379']);
    assert.equal(c.writer.batchSize, 500);
    assert.deepEqual(c.rateLimits.perUser, { rate: 5, burst: 10 });
    assert.deepEqual(c.http.trustProxy, ['loopback', '10.0.0.0/8']);
    assert.equal(c.http.apiWorkers, 4);
    assert.equal(c.admission.maxUtilization, 0.5);
  });

  test('an empty value is "not set": the default applies', () => {
    const c = loadConfig({ ...base, PORT: '', REDIS_URL: '', WRITER_LOCK_MS: '' });
    assert.equal(c.http.port, 3000);
    assert.equal(c.redis.url, 'redis://127.0.0.1:6379');
    assert.equal(c.writer.lockDurationMs, 10_000);
  });

  test('loadSection reads one section alone, ignoring the rest of the environment', () => {
    assert.equal(loadSection('postgres', {}).url, 'postgres://postgres@127.0.0.1:5432/postgres');
    assert.equal(
      loadSection('postgres', { DATABASE_URL: 'postgres://x@db/app', PORT: 'abc' }).url,
      'postgres://x@db/app',
    );
    assert.throws(() => loadSection('postgres', { DATABASE_URL: 'nope' }), /DATABASE_URL/);
  });
});

describe('loadConfig: refusals name the variable in one line', () => {
  for (const [name, value] of [
    ['PORT', 'abc'],
    ['PORT', '70000'],
    ['LOCK_WAIT_MS', '-5'],
    ['LOCK_LEASE_MS', '1.5'],
    ['REDIS_URL', 'not a url'],
    ['REDIS_CLUSTER_NODES', 'host-without-port'],
    ['REDIS_WAIT_REPLICAS', '-1'],
    ['LOCK_BACKEND', 'consul'],
    ['ETCD_ENDPOINTS', '127.0.0.1:2379'],
    ['ZOOKEEPER_CONNECT', 'nowhere'],
    ['WRITER_LOCK_MS', '999'],
    ['WRITER_STALLED_INTERVAL_MS', '0'],
    ['WRITER_BATCH_SIZE', '5001'],
    ['WRITER_BATCH_MS', '10001'],
    ['RATE_LIMIT_PER_IP', '5'],
    ['TRUST_PROXY', '10.0.0.0/33'],
    ['API_WORKERS', '65'],
    ['ADMISSION_MAX_UTILIZATION', '2'],
    ['LOG_LEVEL', 'loud'],
    ['DATABASE_URL', 'nope'],
    ['ADMIN_AUTH_FAILURES', '10'],
    ['BUYER_AUTH', 'oauth'],
    ['BUYER_JWT_SECRET', 'short'],
    ['BUYER_JWT_PUBLIC_KEY', 'not a pem'],
    ['PAYMENT_WEBHOOK_SECRET', 'short'],
    ['HTTP_HEADERS_TIMEOUT_MS', '99'],
    ['METRICS_PORT', '70000'],
  ] as const) {
    test(`${name}=${value}`, () => {
      assertRefused({ ...base, [name]: value }, name, new RegExp(`^invalid configuration: ${name}=`));
    });
  }

  test('every bad variable at once, each with what it must be, in one line (not the first only)', () => {
    const line = assertRefused(
      { ...base, PORT: 'abc', LOCK_WAIT_MS: '-5', LOG_LEVEL: 'loud' },
      'PORT',
      /^invalid configuration: 3 problems: /,
      /PORT="abc": must be an integer from 0 to 65535/,
      /LOG_LEVEL="loud": must be one of fatal, error, warn, info, debug, trace, silent/,
      /LOCK_WAIT_MS="-5": must be an integer from 0 to 60000/,
    );
    // The service's words, not the schema library's.
    assert.doesNotMatch(line, /expected|received|NaN|Invalid/);
  });

  test('bad values and a failed check across fields are reported together', () => {
    assertRefused(
      { ...base, DATABASE_URL: 'nope', ADMISSION_MIN_LIMIT: '200', BUYER_AUTH: 'oauth' },
      'DATABASE_URL',
      /3 problems/,
      /DATABASE_URL="nope": must be a URL/,
      /ADMISSION_MIN_LIMIT \(200\) <= ADMISSION_LIMIT/,
      /BUYER_AUTH="oauth": must be one of jwt, header, none/,
    );
  });

  test('HTTP headers timeout not below the request timeout', () => {
    assertRefused({ ...base, HTTP_HEADERS_TIMEOUT_MS: '30000' }, 'HTTP_HEADERS_TIMEOUT_MS', /below/);
  });

  test('admission limits out of order', () => {
    assertRefused({ ...base, ADMISSION_MIN_LIMIT: '200' }, 'ADMISSION_MIN_LIMIT', /must hold/);
  });

  test('REDIS_URL and REDIS_CLUSTER_NODES both set (an empty REDIS_URL is unset)', () => {
    assertRefused(
      { ...base, REDIS_URL: 'redis://a', REDIS_CLUSTER_NODES: 'a:1' },
      'REDIS_CLUSTER_NODES',
      /not both/,
    );
    assert.deepEqual(loadConfig({ ...base, REDIS_URL: '', REDIS_CLUSTER_NODES: 'a:1' }).redis.clusterNodes, [
      { host: 'a', port: 1 },
    ]);
  });
});

describe('loadConfig: the admin token', () => {
  test('required unless a development run, which gets the development token', () => {
    assertRefused({}, 'ADMIN_TOKEN');
    const { token, devToken } = loadConfig({ FLASHSALE_DEV_RUN: '1' }).admin;
    assert.deepEqual({ token, devToken }, { token: 'dev-admin-token', devToken: true });
    assertRefused({ ADMIN_TOKEN: 'dev-admin-token' }, 'ADMIN_TOKEN', /published default/);
  });

  test('production without its secrets names all three at once, and what production needs', () => {
    const line = assertRefused(
      { NODE_ENV: 'production', FLASHSALE_DEV_RUN: '1' },
      'ADMIN_TOKEN',
      /3 problems/,
      /QUEUE_SECRET must be set/,
      /BUYER_AUTH must be set/,
      /Production needs ADMIN_TOKEN, QUEUE_SECRET \(or WAITING_ROOM=off\) and BUYER_AUTH/,
    );
    // FLASHSALE_DEV_RUN=1 is no way out in production: the hint does not offer it.
    assert.doesNotMatch(line, /FLASHSALE_DEV_RUN=1/);
    assert.match(assertRefused({}, 'ADMIN_TOKEN'), /FLASHSALE_DEV_RUN=1 \(npm start sets it\)/);
  });

  test('outside a development run: a secret of at least 32 characters, never a published one', () => {
    assertRefused({ NODE_ENV: 'production', FLASHSALE_DEV_RUN: '1' }, 'ADMIN_TOKEN');
    assertRefused({ NODE_ENV: 'Production', FLASHSALE_DEV_RUN: '1' }, 'ADMIN_TOKEN', /must be set/);
    for (const NODE_ENV of ['production', 'development']) {
      assertRefused({ ...base, NODE_ENV, ADMIN_TOKEN: 'x'.repeat(31) }, 'ADMIN_TOKEN', /32 characters/);
    }
    assertRefused({ ...base, ADMIN_TOKEN: 'local-dev-admin-token-change-me' }, 'ADMIN_TOKEN', /published/);
    assert.equal(loadConfig({ ...base, NODE_ENV: 'production' }).admin.token, TOKEN);
  });
});

describe('loadConfig: the waiting room', () => {
  test('on by default, with QUEUE_SECRET as its ticket key', () => {
    assert.deepEqual(loadConfig(base).waitingRoom, { enabled: true, secret: QUEUE_SECRET });
  });

  test('QUEUE_SECRET missing or short outside a development run: refused', () => {
    assertRefused({ ...base, QUEUE_SECRET: '' }, 'QUEUE_SECRET');
    assertRefused({ ...base, QUEUE_SECRET: 'short' }, 'QUEUE_SECRET', /32 characters/);
  });

  test('not needed with WAITING_ROOM=off or in a development run', () => {
    assert.equal(loadConfig({ ...base, QUEUE_SECRET: '', WAITING_ROOM: 'off' }).waitingRoom.enabled, false);
    assert.equal(loadConfig({ FLASHSALE_DEV_RUN: '1' }).waitingRoom.enabled, true);
  });
});

describe('newcomer findings', () => {
  test('REDIS_URL with another scheme says the scheme is wrong, without the password', () => {
    const line = assertRefused(
      { ...base, REDIS_URL: 'http://:secret@cache:6379' },
      'REDIS_URL',
      /redis:\/\//,
    );
    assert.doesNotMatch(line, /secret|unreachable/);
    assert.equal(loadConfig({ ...base, REDIS_URL: 'rediss://cache:6380' }).redis.url, 'rediss://cache:6380');
  });

  test('a process without the API (the worker) needs neither ADMIN_TOKEN, QUEUE_SECRET nor BUYER_AUTH', () => {
    const config = loadConfig({}, { api: false });
    for (const section of ['admin', 'waitingRoom', 'buyer', 'buyerJwt', 'payments']) {
      assert.equal(section in config, false, section);
    }
    assert.equal(config.writer.concurrency, 256);
    assert.throws(() => loadConfig({ PORT: 'x' }, { api: false }), /PORT/);
  });
});

describe('secrets', () => {
  test('redactUrl masks the password, also of text that is not a URL', () => {
    assert.equal(redactUrl('redis://:secret@cache:6379'), 'redis://:***@cache:6379');
    assert.equal(redactUrl('postgres://app:p@ss@db:5432/x'), 'postgres://app:***@db:5432/x');
    assert.equal(redactUrl('redis://cache:6379'), 'redis://cache:6379');
    assert.equal(redactUrl('redis://user@cache'), 'redis://user@cache');
    assert.doesNotMatch(redactUrl('http://:secret@cache'), /secret/);
  });

  test('a refused URL is printed without its password', () => {
    const line = assertRefused({ ...base, DATABASE_URL: 'postgres://app:secret@' }, 'DATABASE_URL');
    assert.doesNotMatch(line, /secret/);
  });
});
