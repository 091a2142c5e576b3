// The BullMQ writer killed mid-batch and its job locks (a hung Postgres is not a stall, lock settings),
// the order jobs' retry schedule, and the Batcher.
import assert from 'node:assert/strict';
import { createServer, type Socket } from 'node:net';
import { describe, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { until } from '../harness/async.ts';
import {
  BASE_SERVICE_ENV,
  NO_LOAD_SHEDDING,
  type Spawned,
  spawnService,
  startInfra,
} from '../harness/service.ts';
import { ConfigError } from '../src/config/errors.ts';
import { loadConfig } from '../src/config/load.ts';
import { createDatabase } from '../src/db/database.ts';
import { Batcher } from '../src/orders/batcher.ts';
import {
  createOrderQueue,
  enqueueOrder,
  ORDER_BACKOFF_MAX_MS,
  ORDER_JOB_OPTIONS,
  orderBackoffDelay,
} from '../src/orders/queue.ts';
import { orders, PRODUCT, pendingOf, reserveIn, useWorld } from './support/writer-world.ts';

const { world, waitUntilDrained } = useWorld();

describe('writer crash and job locks', () => {
  test('a writer killed with SIGKILL mid-batch: the next writer persists its jobs once their short lock lapses, each once, none failed', async (t) => {
    // Real processes: only a SIGKILLed one stops renewing its locks without releasing its jobs.
    const infra = await startInfra(NO_LOAD_SHEDDING);
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
      await reserveIn(infra.redis.client(), records);
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
      // Several lock durations and dozens of stalled checks while the batch waits on Postgres: the
      // time passing is what is tested (a writer that stopped renewing would lose its jobs meanwhile).
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
    const base = BASE_SERVICE_ENV;
    const config = loadConfig(base);
    assert.equal(config.writer.lockDurationMs, 10_000);
    assert.equal(config.writer.stalledIntervalMs, 5_000);
    const { opts } = world.start().worker;
    assert.equal(opts.lockDuration, config.writer.lockDurationMs);
    assert.equal(opts.stalledInterval, config.writer.stalledIntervalMs);
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
