// When even a withdrawal cannot be confirmed (a replica does not acknowledge and Postgres is down), the
// answer is 503 outcome_unknown with the orderId; GET settles it once Postgres is back, and so does the key.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import pg from 'pg';
import { until } from '../../harness/async.ts';
import { PgCluster } from '../../harness/pg-cluster.ts';
import { RedisServer } from '../../harness/redis-server.ts';
import { saleStatus } from '../../harness/reshard.ts';
import {
  BASE_SERVICE_ENV,
  call,
  createSale,
  NO_LOAD_SHEDDING,
  placeOrder,
  type Service,
  startService,
} from '../../harness/service.ts';

describe('an order whose withdrawal cannot be confirmed', () => {
  let postgres: PgCluster;
  let master: RedisServer;
  let replica: RedisServer;
  let svc: Service;
  let pool: pg.Pool;
  before(async () => {
    postgres = await PgCluster.start();
    pool = new pg.Pool({ connectionString: postgres.url, max: 1 });
    pool.on('error', () => {});
    master = await RedisServer.start();
    replica = await RedisServer.start();
    await replica.client().replicaof('127.0.0.1', master.port);
    await until('the replica in sync', async () =>
      (await replica.client().info('replication')).includes('master_link_status:up'),
    );
    const env = {
      ...BASE_SERVICE_ENV,
      ...NO_LOAD_SHEDDING,
      REDIS_URL: master.url,
      DATABASE_URL: postgres.url,
    };
    svc = await startService(
      { env },
      {
        REDIS_WAIT_REPLICAS: '1',
        REDIS_WAIT_TIMEOUT_MS: '200',
        SWEEP_AGE_MS: '300',
        SWEEP_INTERVAL_MS: '200',
      },
    );
  });
  after(async () => {
    await svc?.stop();
    await pool?.end();
    await replica?.stop();
    await master?.stop();
    await postgres?.destroy();
  });

  it('is answered 503 outcome_unknown with its orderId; GET and the key settle it alike once Postgres is back', async (t) => {
    await createSale(svc.url, 'q', { stock: 10, shards: 1, perUserLimit: 1 });
    replica.pause();
    await postgres.stopServer();
    let unknown: Awaited<ReturnType<typeof placeOrder>>;
    try {
      unknown = await placeOrder(svc.url, { productId: 'q', userId: 'a' }, { 'idempotency-key': 'ka' });
    } finally {
      replica.resume();
      await postgres.startServer();
    }
    assert.deepEqual(
      [unknown.status, unknown.body.error],
      [503, 'outcome_unknown'],
      JSON.stringify(unknown.body),
    );
    const orderId = String(unknown.body.orderId);
    assert.match(orderId, /^q\.\d+\.0\.[0-9a-f]{24}$/);
    // Postgres decides between a row and a tombstone; GET reads the same, once it can.
    const settled = await until(
      'GET settled',
      async () => {
        const r = await call(svc.url, 'GET', `/api/orders/${orderId}`);
        return r.status === 200 || r.status === 404 ? r : undefined;
      },
      { timeoutMs: 60_000, everyMs: 50 },
    );
    t.diagnostic(`GET settled ${orderId} as ${settled.status}`);
    const again = await placeOrder(svc.url, { productId: 'q', userId: 'a' }, { 'idempotency-key': 'ka' });
    const rows = async () =>
      (await pool.query<{ id: string }>('select id from orders where product_id = $1', ['q'])).rows.map(
        (r) => r.id,
      );
    if (settled.status === 200) {
      assert.equal(again.status, 202);
      assert.equal(again.body.orderId, orderId, 'the key answers the order GET found');
      await until('its row', async () => (await rows()).includes(orderId));
    } else {
      assert.notEqual(again.body.orderId, orderId);
      assert.ok(!(await rows()).includes(orderId));
    }
    const status = await until('drained', async () => {
      const s = await saleStatus(svc.url, 'q');
      return s.reserved === 0 ? s : undefined;
    });
    assert.equal(Number(status.available) + Number(status.sold), status.total);
    assert.equal((await rows()).length, status.sold);
  });
});
