// The BullMQ writer against a private redis-server and a fresh Postgres database: batching,
// idempotency, Postgres outages, poison jobs, graceful close, a writer killed mid-batch and its
// lock settings, plus its retry schedule.
import assert from 'node:assert/strict';
import { createServer, type Socket } from 'node:net';
import { afterEach, beforeEach, describe, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Queue } from 'bullmq';
import type { Redis } from 'ioredis';
import { type Kysely, sql } from 'kysely';
import { ConfigError, loadConfig } from '../src/config.ts';
import { createDatabase, type Database } from '../src/db/database.ts';
import { migrateToLatest } from '../src/db/migrate.ts';
import { countOrders, existingOrderIds, findOrder, sumQuantity } from '../src/db/orders-repo.ts';
import { shardKeys, shardStockKey } from '../src/inventory/keys.ts';
import { Batcher } from '../src/orders/batcher.ts';
import type { OrderRecord } from '../src/orders/order.ts';
import {
  createOrderQueue,
  enqueueOrder,
  ORDER_BACKOFF_MAX_MS,
  ORDER_JOB_OPTIONS,
  orderBackoffDelay,
} from '../src/orders/queue.ts';
import { type BatchStats, startWriter, type Writer, type WriterOptions } from '../src/orders/writer.ts';
import { until } from './support/async.ts';
import { createTestDatabase, type TestDatabase } from './support/postgres.ts';
import { freePort, RedisServer } from './support/redis-server.ts';
import { ADMIN_TOKEN, type Spawned, spawnService, startInfra } from './support/service.ts';

const PRODUCT = 'P1';
const SHARDS = 4;

const order = (n: number): OrderRecord => ({
  orderId: `ord-${n.toString().padStart(6, '0')}`,
  productId: PRODUCT,
  userId: `user-${n}`,
  quantity: 1 + (n % 3),
  shardKey: shardStockKey(PRODUCT, 1, n % SHARDS),
  generation: 1,
  shardIndex: n % SHARDS,
  token: 100 + n,
  reservedAt: Date.now(),
});
const orders = (count: number, from = 0) => Array.from({ length: count }, (_, i) => order(from + i));

/** One test's world: its own redis-server, database, queue and writers. */
interface World {
  redis: RedisServer;
  client: Redis;
  tdb: TestDatabase;
  db: Kysely<Database>;
  queue: Queue<OrderRecord>;
  batches: BatchStats[];
  writers: Writer[];
  extraDbs: Kysely<Database>[];
  start(overrides?: Partial<WriterOptions>): Writer;
  reserve(records: OrderRecord[]): Promise<void>;
  reservationsLeft(): Promise<Set<string>>;
  counts(): Promise<Record<string, number>>;
}

let world: World;

beforeEach(async () => {
  const redis = await RedisServer.start();
  const tdb = await createTestDatabase();
  const db = createDatabase(tdb.url);
  await migrateToLatest(db);
  const client = redis.client();
  const batches: BatchStats[] = [];
  const writers: Writer[] = [];
  world = {
    redis,
    client,
    tdb,
    db,
    queue: createOrderQueue(redis.url),
    batches,
    writers,
    extraDbs: [],
    start(overrides = {}) {
      const writer = startWriter({
        connection: redis.url,
        db,
        concurrency: 256,
        batchSize: 100,
        batchMaxWaitMs: 5,
        onBatch: (s) => batches.push(s),
        ...overrides,
      });
      writers.push(writer);
      return writer;
    },
    async reserve(records) {
      const pipeline = client.pipeline();
      for (const r of records)
        pipeline.hset(shardKeys(r.shardKey).reservations, r.orderId, JSON.stringify(r));
      await pipeline.exec();
    },
    async reservationsLeft() {
      const left = new Set<string>();
      for (let i = 0; i < SHARDS; i++) {
        for (const id of await client.hkeys(shardKeys(shardStockKey(PRODUCT, 1, i)).reservations))
          left.add(id);
      }
      return left;
    },
    async counts() {
      return world.queue.getJobCounts('waiting', 'active', 'delayed', 'prioritized', 'completed', 'failed');
    },
  };
});

afterEach(async () => {
  await Promise.all(world.writers.map((w) => w.close()));
  await world.queue.close();
  await Promise.all([world.db, ...world.extraDbs].map((db) => db.destroy()));
  await world.tdb.drop();
  await world.redis.stop();
});

const pendingOf = (c: Record<string, number>) =>
  (c.waiting ?? 0) + (c.active ?? 0) + (c.delayed ?? 0) + (c.prioritized ?? 0);

async function waitUntilDrained(expectedRows: number): Promise<void> {
  await until(
    `${expectedRows} rows and an empty queue`,
    async () =>
      (await countOrders(world.db, PRODUCT)) === expectedRows && pendingOf(await world.counts()) === 0,
    { timeoutMs: 60_000 },
  );
}

describe('writer', () => {
  test('1,000 jobs become 1,000 rows in multi-row batches and their reservations are cleared', async () => {
    const records = orders(1000);
    await world.reserve(records);
    assert.equal((await world.reservationsLeft()).size, 1000);
    await Promise.all(records.map((r) => enqueueOrder(world.queue, r)));
    world.start();

    await waitUntilDrained(1000);
    assert.equal(
      await sumQuantity(world.db, PRODUCT),
      records.reduce((s, r) => s + r.quantity, 0),
    );
    assert.deepEqual(await world.reservationsLeft(), new Set());
    const counts = await world.counts();
    assert.equal(counts.failed, 0);
    assert.equal(counts.completed, 1000);

    const sizes = world.batches.map((b) => b.size);
    assert.equal(
      sizes.reduce((a, b) => a + b, 0),
      1000,
    );
    assert.equal(
      world.batches.reduce((a, b) => a + b.inserted, 0),
      1000,
    );
    assert.ok(Math.max(...sizes) > 1, `batches were single rows: ${sizes.join(',')}`);
    assert.ok(Math.max(...sizes) <= 100, 'batchSize is respected');
    assert.ok(world.batches.length < 1000 / 2, `${world.batches.length} batches for 1000 jobs`);
  });

  test('the same order delivered twice, or re-added after completion, is one row', async () => {
    const record = order(7);
    world.start();
    // Two jobs with different ids carrying one order (e.g. sweeper replay racing the API's enqueue).
    const a = await world.queue.add('order', record, { jobId: 'dup-a' });
    const b = await world.queue.add('order', record, { jobId: 'dup-b' });
    await until('both duplicates to complete', async () => {
      const states = await Promise.all([a.getState(), b.getState()]);
      return states.every((s) => s === 'completed');
    });
    assert.equal(await countOrders(world.db, PRODUCT), 1);

    // Re-adding the id of a kept completed job is a no-op in BullMQ...
    await enqueueOrder(world.queue, record);
    await until(
      'the order job to complete',
      async () => (await world.queue.getJobState(record.orderId)) === 'completed',
    );
    await enqueueOrder(world.queue, record);
    assert.equal(await world.queue.getJobState(record.orderId), 'completed');
    // ...and once that job has been removed, the re-added job is processed and hits ON CONFLICT.
    await world.queue.remove(record.orderId);
    const batchesBefore = world.batches.length;
    await enqueueOrder(world.queue, record);
    await until(
      'the re-added job to complete',
      async () => (await world.queue.getJobState(record.orderId)) === 'completed',
    );

    assert.equal(await countOrders(world.db, PRODUCT), 1);
    assert.equal(
      world.batches.reduce((s, b) => s + b.inserted, 0),
      1,
      'only the first delivery inserted',
    );
    assert.ok(world.batches.length > batchesBefore, 'the re-added job went through a batch');
    assert.equal(world.batches.at(-1)?.inserted, 0);
    assert.equal((await world.counts()).failed, 0);
    const stored = await findOrder(world.db, record.orderId);
    assert.equal(stored?.userId, record.userId);
  });

  test('Postgres down: jobs wait and retry, none fails, and all land once Postgres is back', async () => {
    const deadDb = createDatabase(`postgres://postgres@127.0.0.1:${await freePort()}/none`, {
      connectionTimeoutMillis: 1000,
    });
    world.extraDbs.push(deadDb);
    const records = orders(50);
    await world.reserve(records);
    await Promise.all(records.map((r) => enqueueOrder(world.queue, r)));
    const down = world.start({ db: deadDb });
    await sleep(2000);

    let counts = await world.counts();
    assert.equal(counts.failed, 0, 'no job failed');
    assert.equal(counts.completed, 0);
    assert.equal(pendingOf(counts), 50, 'every job is still in the queue');
    const jobs = await world.queue.getJobs(['delayed', 'waiting', 'active'], 0, -1);
    const retried = jobs.filter((j) => j.attemptsMade >= 2);
    assert.ok(retried.length > 0, 'the writer kept retrying');
    assert.ok(
      retried.every((j) => j.failedReason === 'Postgres is unavailable'),
      jobs[0]?.failedReason,
    );
    assert.equal(world.batches.length, 0);

    await down.close();
    counts = await world.counts();
    assert.equal(counts.active, 0, 'close left no job active');
    assert.equal(pendingOf(counts), 50);
    assert.equal((await world.reservationsLeft()).size, 50, 'reservations stay until rows exist');

    world.start();
    await waitUntilDrained(50);
    assert.equal((await world.counts()).failed, 0);
    assert.deepEqual(await world.reservationsLeft(), new Set());
  });

  test('a poison job fails at once with the field in its reason and blocks nothing', async () => {
    const good = orders(20);
    await world.reserve(good);
    await Promise.all(good.slice(0, 10).map((r) => enqueueOrder(world.queue, r)));
    const poison = { ...order(999), quantity: 'x' };
    await world.queue.add('order', poison as unknown as OrderRecord, { jobId: 'poison' });
    await Promise.all(good.slice(10).map((r) => enqueueOrder(world.queue, r)));
    world.start();

    await waitUntilDrained(20);
    const counts = await world.counts();
    assert.equal(counts.failed, 1);
    assert.equal(counts.completed, 20);
    const failed = await world.queue.getJob('poison');
    assert.equal(await failed?.getState(), 'failed');
    assert.match(failed?.failedReason ?? '', /invalid order data: .*quantity/);
    assert.equal(failed?.attemptsMade, 1, 'not retried');
    assert.deepEqual(await world.reservationsLeft(), new Set());
  });

  test('a row Postgres rejects fails alone; the rest of its batch is inserted', async () => {
    // Stands in for any data error zod cannot foresee: this database refuses one user.
    await sql`alter table orders add constraint no_banned_user check (user_id <> 'banned')`.execute(world.db);
    const records = orders(30);
    const banned = { ...order(15), userId: 'banned' };
    records[15] = banned;
    await world.reserve(records);
    await Promise.all(records.map((r) => enqueueOrder(world.queue, r)));
    world.start({ batchSize: 30, batchMaxWaitMs: 50 });

    await until('29 rows and one failed job', async () => {
      const counts = await world.counts();
      return (await countOrders(world.db, PRODUCT)) === 29 && counts.failed === 1 && pendingOf(counts) === 0;
    });
    const failed = await world.queue.getJob(banned.orderId);
    assert.match(failed?.failedReason ?? '', /rejected by Postgres: .*no_banned_user/);
    assert.equal(failed?.attemptsMade, 1, 'not retried');
    assert.deepEqual(await world.reservationsLeft(), new Set([banned.orderId]), 'its reservation is kept');
  });

  test('close() while jobs flow leaves each job either done with a row or still queued', async () => {
    const records = orders(3000);
    await world.reserve(records);
    await world.queue.addBulk(records.map((r) => ({ name: 'order', data: r, opts: { jobId: r.orderId } })));
    const writer = world.start({ batchSize: 50 });
    await until('the first batch', async () => world.batches.length > 0);
    await writer.close();

    const rows = await existingOrderIds(
      world.db,
      records.map((r) => r.orderId),
    );
    assert.ok(rows.size > 0 && rows.size < records.length, `close came mid-flow (${rows.size} rows)`);
    const counts = await world.counts();
    assert.equal(counts.active, 0, 'no job is left active');
    assert.equal(counts.failed, 0);
    const queued = new Set(
      (await world.queue.getJobs(['waiting', 'delayed', 'prioritized'], 0, -1)).map((j) => j.id),
    );
    const reserved = await world.reservationsLeft();
    for (const { orderId } of records) {
      if (rows.has(orderId)) {
        assert.ok(!queued.has(orderId), `${orderId} has a row but is still queued`);
        assert.ok(!reserved.has(orderId), `${orderId} has a row but its reservation is left`);
      } else {
        assert.ok(queued.has(orderId), `${orderId} has no row and is not queued: lost`);
        assert.ok(reserved.has(orderId), `${orderId} lost its reservation without a row`);
      }
    }
    assert.equal(counts.completed, rows.size);

    world.start();
    await waitUntilDrained(records.length);
    assert.deepEqual(await world.reservationsLeft(), new Set());
  });
});

describe('writer crash and job locks', () => {
  test('a writer killed with SIGKILL mid-batch: the next writer persists its jobs once their short lock lapses, each once, none failed', async (t) => {
    // Real processes: only a SIGKILLed one stops renewing its locks without releasing its jobs.
    const infra = await startInfra();
    const queue = createOrderQueue(infra.redis.url);
    const spawned: Spawned[] = [];
    try {
      const env = {
        WRITER_LOCK_MS: '2000',
        WRITER_STALLED_INTERVAL_MS: '500',
        WRITER_CONCURRENCY: '150',
        WRITER_BATCH_SIZE: '100',
      };
      const records = orders(450);
      // The 50 jobs left after four full batches wait for a fifth that never fills: the kill finds
      // them held in an open batch.
      spawned.push(await spawnService(infra, 'worker', { ...env, WRITER_BATCH_MS: '10000' }));
      await queue.addBulk(records.map((r) => ({ name: 'order', data: r, opts: { jobId: r.orderId } })));
      await until(
        '400 rows and 50 jobs held',
        async () => (await infra.rows(PRODUCT)) === 400 && (await queue.getActiveCount()) === 50,
      );
      const held = (await queue.getJobs(['active'], 0, -1)).map((j) => j.id);

      await spawned[0]?.kill();
      const killedAt = performance.now();
      assert.equal(await infra.rows(PRODUCT), 400, 'the held batch was not committed before the kill');
      spawned.push(await spawnService(infra, 'worker', env));
      // BullMQ's defaults (30 s lock, 30 s stalled check) would take 30 to 60 s here.
      await until(
        '450 rows and an empty queue',
        async () =>
          (await infra.rows(PRODUCT)) === 450 &&
          pendingOf(await queue.getJobCounts('waiting', 'active', 'delayed', 'prioritized')) === 0,
        { timeoutMs: 20_000 },
      );
      t.diagnostic(
        `the killed writer's jobs were persisted ${Math.round(performance.now() - killedAt)} ms after the kill`,
      );

      const { rows } = await infra.pool.query<{ id: string }>('select id from orders where product_id = $1', [
        PRODUCT,
      ]);
      assert.equal(rows.length, records.length);
      assert.deepEqual(new Set(rows.map((r) => r.id)), new Set(records.map((r) => r.orderId)));
      const counts = await queue.getJobCounts('completed', 'failed');
      assert.equal(counts.failed, 0, 'no job failed');
      assert.equal(counts.completed, records.length);
      for (const id of held) {
        const job = await queue.getJob(id as string);
        assert.equal(await job?.getState(), 'completed');
        assert.equal(job?.stalledCounter, 1, `${id} came back through the stalled check, once`);
      }
    } finally {
      await Promise.all(spawned.map((s) => s.kill()));
      await queue.close();
      await infra.stop();
    }
  });

  test('a batch waiting on a hung Postgres keeps its locks: no job of a live writer is taken as stalled', async () => {
    // Accepts connections and never answers, like a frozen server: the batch's connect waits.
    const sockets = new Set<Socket>();
    const blackHole = createServer((socket) => {
      sockets.add(socket);
      socket.on('error', () => {});
    });
    await new Promise<void>((resolve) => blackHole.listen(0, '127.0.0.1', resolve));
    const { port } = blackHole.address() as { port: number };
    try {
      const hungDb = createDatabase(`postgres://postgres@127.0.0.1:${port}/none`, {
        connectionTimeoutMillis: 5000,
      });
      world.extraDbs.push(hungDb);
      const records = orders(20);
      await world.reserve(records);
      await Promise.all(records.map((r) => enqueueOrder(world.queue, r)));
      const stalled: string[] = [];
      const writer = world.start({ db: hungDb, lockDurationMs: 1000, stalledIntervalMs: 100 });
      writer.worker.on('stalled', (id) => stalled.push(id));

      await until('the 20 jobs to be held', async () => (await world.counts()).active === 20);
      // Several lock durations and dozens of stalled checks while the batch waits on Postgres.
      await sleep(3500);
      assert.equal((await world.counts()).active, 20, 'the jobs are still held by the writer');
      assert.deepEqual(stalled, []);
      const jobs = await world.queue.getJobs(['active'], 0, -1);
      assert.ok(
        jobs.every((j) => j.stalledCounter === 0),
        jobs.map((j) => j.stalledCounter).join(','),
      );

      await writer.close();
      assert.deepEqual(stalled, []);
      world.start();
      await waitUntilDrained(records.length);
      assert.equal((await world.counts()).failed, 0);
    } finally {
      for (const socket of sockets) socket.destroy();
      blackHole.close();
    }
  });

  test('lock settings: defaults reach BullMQ, invalid values stop the start naming the variable', () => {
    const base = { ADMIN_TOKEN };
    const config = loadConfig(base);
    assert.equal(config.WRITER_LOCK_MS, 10_000);
    assert.equal(config.WRITER_STALLED_INTERVAL_MS, 5_000);
    const { opts } = world.start().worker;
    assert.equal(opts.lockDuration, config.WRITER_LOCK_MS);
    assert.equal(opts.stalledInterval, config.WRITER_STALLED_INTERVAL_MS);
    assert.ok((opts.maxStalledCount ?? 0) >= 1_000_000, 'a crashed writer never fails a job');

    for (const [name, value] of [
      ['WRITER_STALLED_INTERVAL_MS', '0'],
      ['WRITER_STALLED_INTERVAL_MS', '-1'],
      ['WRITER_STALLED_INTERVAL_MS', 'often'],
      ['WRITER_LOCK_MS', '999'],
      ['WRITER_LOCK_MS', '2500.5'],
      ['WRITER_LOCK_MS', '3600000'],
    ] as const) {
      assert.throws(
        () => loadConfig({ ...base, [name]: value }),
        (err: unknown) =>
          err instanceof ConfigError &&
          err.message.startsWith(`invalid configuration: ${name}=`) &&
          !err.message.includes('\n'),
        `${name}=${value}`,
      );
    }
    assert.throws(
      () => startWriter({ connection: world.redis.url, db: world.db, lockDurationMs: 999 }),
      RangeError,
    );
    assert.throws(
      () => startWriter({ connection: world.redis.url, db: world.db, stalledIntervalMs: 0 }),
      RangeError,
    );
  });
});

describe('order job options', () => {
  test('retries practically forever with an exponential delay capped at 5 s', () => {
    assert.ok(ORDER_JOB_OPTIONS.attempts >= 1_000_000);
    // BullMQ ignores the worker's custom strategy for its built-in type names.
    assert.notEqual(ORDER_JOB_OPTIONS.backoff.type, 'exponential');
    assert.notEqual(ORDER_JOB_OPTIONS.backoff.type, 'fixed');
    assert.deepEqual([1, 2, 3, 4, 5, 6, 7, 50, 1_000_000].map(orderBackoffDelay), [
      200,
      400,
      800,
      1600,
      3200,
      ORDER_BACKOFF_MAX_MS,
      ORDER_BACKOFF_MAX_MS,
      ORDER_BACKOFF_MAX_MS,
      ORDER_BACKOFF_MAX_MS,
    ]);
    assert.equal(ORDER_JOB_OPTIONS.removeOnFail, false);
  });
});

describe('Batcher', () => {
  test('flushes at maxSize and after maxWaitMs, and settles each item with its own outcome', async () => {
    const flushed: number[][] = [];
    const batcher = new Batcher<number>({
      maxSize: 3,
      maxWaitMs: 20,
      flush: async (items) => {
        flushed.push(items);
        return items.map((n) => (n === 5 ? new Error('five') : undefined));
      },
    });
    const full = [1, 2, 3].map((n) => batcher.add(n));
    await Promise.all(full);
    assert.deepEqual(flushed, [[1, 2, 3]], 'a full batch does not wait for the timer');
    const started = Date.now();
    const partial = [4, 5].map((n) => batcher.add(n));
    await partial[0];
    await assert.rejects(partial[1] as Promise<void>, /five/);
    assert.ok(Date.now() - started >= 15, 'a partial batch waits for the timer');
    assert.deepEqual(flushed, [
      [1, 2, 3],
      [4, 5],
    ]);
  });

  test('a failing flush rejects every item; drain() flushes at once and waits', async () => {
    let calls = 0;
    const batcher = new Batcher<number>({
      maxSize: 100,
      maxWaitMs: 60_000,
      flush: async () => {
        calls++;
        throw new Error('db down');
      },
    });
    const items = [1, 2].map((n) =>
      batcher.add(n).then(
        () => 'ok',
        (e: Error) => e.message,
      ),
    );
    await batcher.drain();
    assert.deepEqual(await Promise.all(items), ['db down', 'db down']);
    assert.equal(calls, 1);
  });
});
