// GET /metrics moves as the scenario says, and request logs carry the request id.
import assert from 'node:assert/strict';
import { once } from 'node:events';
import type { AddressInfo } from 'node:net';
import { Writable } from 'node:stream';
import { describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { LockClient } from '@flashsale/lock';
import express from 'express';
import { until } from '../harness/async.ts';
import { admin, call, createSale, drained, type Spawned, spawnService } from '../harness/service.ts';
import { startApi } from '../src/boot/api.ts';
import { boot } from '../src/boot/boot.ts';
import { shutdown } from '../src/boot/shutdown.ts';
import { requestLog } from '../src/http/request-log.ts';
import { createLogger } from '../src/log.ts';
import { queuedOn } from './support/lock-queue.ts';
import { scrape, value } from './support/metrics.ts';
import { useInfra, useService } from './support/suite.ts';

/** Growth of each listed series between two scrapes (a series absent before counts from 0). */
function delta(before: Map<string, number>, afterScrape: Map<string, number>, key: string): number {
  return value(afterScrape, key) - (before.get(key) ?? 0);
}

const order = (url: string, productId: string, userId: string, headers: Record<string, string> = {}) =>
  call(url, 'POST', '/api/orders', { productId, userId }, headers);

describe('metrics of the API + writer process', () => {
  const { infra, svc } = useService();

  it('N accepted orders grow the accepted counter, the latency histogram and the shard picks by N (free shards need no lock hold)', async () => {
    await createSale(svc.url, 'm-acc', { stock: 50, shards: 4 });
    const before = await scrape(svc.url);
    const n = 13;
    for (let i = 0; i < n; i++) assert.equal((await order(svc.url, 'm-acc', `u${i}`)).status, 202);
    const afterScrape = await scrape(svc.url);
    assert.equal(delta(before, afterScrape, 'flashsale_orders_total{outcome="accepted"}'), n);
    assert.equal(delta(before, afterScrape, 'flashsale_order_duration_seconds_count{outcome="accepted"}'), n);
    assert.equal(
      delta(before, afterScrape, 'flashsale_shard_attempts_total{outcome="reserved",fallback="false"}'),
      n,
    );
    // A free shard is reserved in one script run that takes its lock only for that run (reserve.lua
    // without an owner): no hold, so the lock histograms count only waits (the next test).
    for (const outcome of ['sold_out', 'busy', 'limit_exceeded', 'invalid', 'unknown_product', 'error']) {
      assert.equal(delta(before, afterScrape, `flashsale_orders_total{outcome="${outcome}"}`), 0, outcome);
    }
    // The writer persisted them: its batch histogram counted exactly these n jobs.
    const batchesBefore = value(before, 'flashsale_writer_batch_size_count');
    await drained(svc.url, 'm-acc');
    const persisted = await scrape(svc.url);
    assert.equal(delta(before, persisted, 'flashsale_writer_batch_size_sum'), n);
    assert.ok(value(persisted, 'flashsale_writer_batch_size_count') > batchesBefore);
    assert.ok(delta(before, persisted, 'flashsale_writer_batch_duration_seconds_count') >= 1);
  });

  it('sold out: every refusal counts as sold_out; after the first full miss the fast path answers', async () => {
    await createSale(svc.url, 'm-so', { stock: 2, shards: 2 });
    const before = await scrape(svc.url);
    const statuses: number[] = [];
    for (let i = 0; i < 5; i++) statuses.push((await order(svc.url, 'm-so', `u${i}`)).status);
    assert.deepEqual(statuses, [202, 202, 409, 409, 409]);
    const afterScrape = await scrape(svc.url);
    assert.equal(delta(before, afterScrape, 'flashsale_orders_total{outcome="accepted"}'), 2);
    assert.equal(delta(before, afterScrape, 'flashsale_orders_total{outcome="sold_out"}'), 3);
    // The third order tried both shards (one pick, one fallback) and marked the product sold out;
    // the fourth and fifth never touched Redis.
    assert.equal(delta(before, afterScrape, 'flashsale_sold_out_fast_path_total'), 2);
    assert.equal(
      delta(before, afterScrape, 'flashsale_shard_attempts_total{outcome="insufficient",fallback="true"}'),
      1,
    );
    // A restock clears the flag once its sale event arrives: from then on orders go to Redis again
    // and are accepted. Until then each order is a fast-path sold out, and counted as one.
    await call(svc.url, 'POST', '/admin/products/m-so/restock', { delta: 1 }, admin);
    let fastPathAnswers = 0;
    await until('an order accepted after the restock', async () => {
      const r = await order(svc.url, 'm-so', 'u9');
      if (r.status === 202) return true;
      assert.equal(r.status, 409, JSON.stringify(r.body));
      fastPathAnswers += 1;
      return undefined;
    });
    const restocked = await scrape(svc.url);
    assert.equal(delta(afterScrape, restocked, 'flashsale_sold_out_fast_path_total'), fastPathAnswers);
    assert.equal(delta(afterScrape, restocked, 'flashsale_orders_total{outcome="accepted"}'), 1);
    await drained(svc.url, 'm-so');
  });

  it('invalid, unknown-product and replayed orders are counted under their own outcome', async () => {
    await createSale(svc.url, 'm-misc', { stock: 5, shards: 1 });
    const before = await scrape(svc.url);
    assert.equal((await call(svc.url, 'POST', '/api/orders', { productId: 'm-misc' })).status, 400);
    assert.equal((await call(svc.url, 'POST', '/api/orders', '{"productId":')).status, 400);
    assert.equal((await order(svc.url, 'nope', 'u1')).status, 404);
    const key = { 'idempotency-key': 'obs-replay-1' };
    const first = await order(svc.url, 'm-misc', 'u1', key);
    const replay = await order(svc.url, 'm-misc', 'u1', key);
    assert.equal(first.status, 202);
    assert.deepEqual(replay.body, first.body);
    const afterScrape = await scrape(svc.url);
    assert.equal(delta(before, afterScrape, 'flashsale_orders_total{outcome="invalid"}'), 2);
    assert.equal(delta(before, afterScrape, 'flashsale_orders_total{outcome="unknown_product"}'), 1);
    assert.equal(delta(before, afterScrape, 'flashsale_orders_total{outcome="accepted"}'), 1);
    assert.equal(delta(before, afterScrape, 'flashsale_orders_total{outcome="replayed"}'), 1);
    await drained(svc.url, 'm-misc');
  });

  it('a reshard counts; orders that waited for a held shard lock show as hand-offs and lock wait', async () => {
    await createSale(svc.url, 'm-lock', { stock: 10, shards: 1 });
    const before = await scrape(svc.url);
    const r = await call(svc.url, 'POST', '/admin/products/m-lock/reshard', { shards: 1 }, admin);
    assert.equal(r.status, 200);
    const status = await call(svc.url, 'GET', '/admin/products/m-lock', undefined, admin);
    const shardLock = `${(status.body.shards as { key: string }[])[0]?.key}:lock`;

    // Another client (an operator's tool, another process) holds the only shard's lock until the
    // three orders queue behind it.
    const locks = new LockClient(infra.client);
    try {
      const held = await locks.acquire(shardLock, { leaseMs: 5000 });
      const orders = Promise.all([0, 1, 2].map((i) => order(svc.url, 'm-lock', `w${i}`)));
      await queuedOn(infra.client, shardLock, 3);
      await held.release();
      for (const o of await orders) assert.equal(o.status, 202);
    } finally {
      await locks.close();
    }
    const afterScrape = await scrape(svc.url);
    assert.equal(delta(before, afterScrape, 'flashsale_reshards_total'), 1);
    assert.equal(delta(before, afterScrape, 'flashsale_admin_changes_total{kind="reshard"}'), 1);
    assert.equal(
      delta(before, afterScrape, 'flashsale_admin_change_duration_seconds_count{kind="reshard"}'),
      1,
    );
    assert.ok(delta(before, afterScrape, 'flashsale_lock_handoffs_total{lock="shard"}') >= 1);
    // The three orders were seen queued on the held lock: three waits, each of some time, recorded.
    const wait = (m: string) => delta(before, afterScrape, `${m}{lock="shard",result="acquired"}`);
    assert.ok(wait('flashsale_lock_wait_seconds_count') >= 3, 'the three waits are counted');
    assert.ok(wait('flashsale_lock_wait_seconds_sum') > 0, 'and their time is summed');
    // The reshard's admin lock was taken and released too.
    assert.ok(delta(before, afterScrape, 'flashsale_lock_hold_seconds_count{lock="admin"}') >= 1);
    await drained(svc.url, 'm-lock');
  });

  it('exposes fencing refusals, queue depth, outstanding reservations and event-loop lag', async () => {
    const m = await scrape(svc.url);
    assert.equal(value(m, 'flashsale_fencing_refusals_total'), 0);
    for (const state of ['waiting', 'active', 'delayed', 'failed']) {
      assert.ok(value(m, `flashsale_order_queue_jobs{state="${state}"}`) >= 0);
    }
    assert.equal(value(m, 'flashsale_reservations_outstanding'), 0);
    assert.equal(value(m, 'flashsale_reservations_scan_complete'), 1);
    assert.ok(value(m, 'nodejs_eventloop_lag_seconds') >= 0);
    // Product ids never become label values.
    const text = await (await fetch(`${svc.url}/metrics`)).text();
    assert.doesNotMatch(text, /m-acc|m-so|m-lock/);
  });
});

describe('queue depth and outstanding reservations (API without a writer, then a worker process)', () => {
  const { infra } = useInfra();

  it('N accepted orders wait in the queue and as reservations until a writer persists them', async () => {
    const rt = await boot('test-api', infra.env);
    const server = await startApi(rt);
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    let worker: Spawned | undefined;
    try {
      await createSale(url, 'q1', { stock: 20, shards: 3 });
      const n = 7;
      for (let i = 0; i < n; i++) assert.equal((await order(url, 'q1', `u${i}`)).status, 202);
      const waiting = await scrape(url);
      assert.equal(value(waiting, 'flashsale_order_queue_jobs{state="waiting"}'), n);
      assert.equal(value(waiting, 'flashsale_order_queue_jobs{state="failed"}'), 0);
      assert.equal(value(waiting, 'flashsale_reservations_outstanding'), n);
      assert.equal(value(waiting, 'flashsale_reservations_scan_complete'), 1);

      // A separate worker process drains them, and serves its own /metrics with the batches.
      worker = await spawnService(infra, 'worker');
      await drained(url, 'q1');
      const done = await scrape(url);
      assert.equal(value(done, 'flashsale_order_queue_jobs{state="waiting"}'), 0);
      assert.equal(value(done, 'flashsale_reservations_outstanding'), 0);
      const workerUrl = worker.url;
      const workerMetrics = await until('the worker serves GET /metrics', () =>
        scrape(workerUrl).catch(() => undefined),
      );
      assert.equal(value(workerMetrics, 'flashsale_writer_batch_size_sum'), n);
    } finally {
      await worker?.stop();
      await shutdown(rt);
    }
  });
});

describe('request logs', () => {
  const { infra } = useInfra();

  /** The JSON lines of a process's output that carry this request id. */
  const linesOf = (output: string, reqId: string) =>
    output
      .split('\n')
      .filter((l) => l.startsWith('{'))
      .map((l) => JSON.parse(l) as Record<string, unknown>)
      .filter((l) => l.reqId === reqId);

  it('at debug, a request logs a line with its request id, echoed in X-Request-Id; a bad id is replaced', async () => {
    const svc = await spawnService(infra, 'main', { LOG_LEVEL: 'debug' });
    try {
      await createSale(svc.url, 'l1', { stock: 5, shards: 1 });
      const ok = await order(svc.url, 'l1', 'u1', { 'x-request-id': 'obs-debug-1' });
      assert.equal(ok.status, 202);
      assert.equal(ok.headers.get('x-request-id'), 'obs-debug-1');
      const bad = await order(svc.url, 'l1', 'u2', { 'x-request-id': 'has spaces "and quotes"' });
      const generated = bad.headers.get('x-request-id') ?? '';
      assert.match(generated, /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/);
      const invalid = await call(svc.url, 'POST', '/api/orders', '{oops', { 'x-request-id': 'obs-debug-2' });
      assert.equal(invalid.status, 400);
      // The process logs in request order: once the last request's line is in, so are the others.
      await until('a log line with reqId obs-debug-2', () => linesOf(svc.output(), 'obs-debug-2')[0], {
        describe: () => svc.output(),
      });
      const [line] = linesOf(svc.output(), 'obs-debug-1');
      assert.ok(line, `no log line with reqId obs-debug-1 in:\n${svc.output()}`);
      assert.equal(line.level, 20);
      assert.equal(line.status, 202);
      assert.equal(line.path, '/api/orders');
      assert.equal(linesOf(svc.output(), generated).length, 1);
      assert.equal(linesOf(svc.output(), 'obs-debug-2')[0]?.status, 400);
    } finally {
      await svc.stop();
    }
  });

  it('at info, a successful order logs nothing, and a 503 logs a line with its request id', async () => {
    const svc = await spawnService(infra, 'main', { LOG_LEVEL: 'info' });
    try {
      await createSale(svc.url, 'l2', { stock: 5, shards: 1 });
      assert.equal((await order(svc.url, 'l2', 'u1', { 'x-request-id': 'obs-info-ok' })).status, 202);
      // Redis goes away: the order is answered 503, and that is logged, with the request id.
      await infra.redis.kill();
      const down = await order(svc.url, 'l2', 'u2', { 'x-request-id': 'obs-info-503' });
      assert.equal(down.status, 503);
      assert.equal(down.headers.get('x-request-id'), 'obs-info-503');
      const line = await until(
        'a log line with reqId obs-info-503',
        () => linesOf(svc.output(), 'obs-info-503')[0],
        {
          describe: () => svc.output(),
        },
      );
      assert.ok((line.level as number) >= 40);
      assert.equal(line.status, 503);
      // The process logs in request order: the 503's line is in, so the 202 before it logged nothing.
      assert.deepEqual(linesOf(svc.output(), 'obs-info-ok'), []);
    } finally {
      await svc.kill();
      await infra.redis.restart();
    }
  });

  it('req.log carries the request id across awaits, and is made only for a request that logs', async () => {
    const lines: Record<string, unknown>[] = [];
    const sink = new Writable({
      write(chunk: Buffer, _enc, done) {
        for (const l of chunk.toString().split('\n'))
          if (l) lines.push(JSON.parse(l) as Record<string, unknown>);
        done();
      },
    });
    const logger = createLogger('info', sink);
    let children = 0;
    const child = logger.child.bind(logger);
    logger.child = ((...args: Parameters<typeof child>) => {
      children += 1;
      return child(...args);
    }) as typeof logger.child;
    const app = express();
    app.use(requestLog(logger));
    app.post('/logs', async (req, res) => {
      await sleep(5); // a timer hop: the request id must survive it
      req.log.warn('enqueue failed (simulated)');
      res.status(202).json({});
    });
    app.post('/quiet', (_req, res) => {
      res.status(202).json({});
    });
    const server = app.listen(0, '127.0.0.1');
    await once(server, 'listening');
    try {
      const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
      const quiet = await Promise.all(
        ['q-1', 'q-2', 'q-3'].map((id) =>
          fetch(`${url}/quiet`, { method: 'POST', headers: { 'x-request-id': id } }),
        ),
      );
      assert.deepEqual(
        quiet.map((r) => r.headers.get('x-request-id')),
        ['q-1', 'q-2', 'q-3'],
      );
      // At info nothing was logged for them, so no child logger was made.
      assert.equal(children, 0);
      const [a, b] = await Promise.all([
        fetch(`${url}/logs`, { method: 'POST', headers: { 'x-request-id': 'hook-a' } }),
        fetch(`${url}/logs`, { method: 'POST', headers: { 'x-request-id': 'hook-b' } }),
      ]);
      assert.equal(a.status, 202);
      assert.equal(b.headers.get('x-request-id'), 'hook-b');
      const failures = () => lines.filter((l) => l.msg === 'enqueue failed (simulated)');
      await until('two simulated failures logged', () => failures().length >= 2);
      assert.deepEqual(
        failures()
          .map((l) => String(l.reqId))
          .sort(),
        ['hook-a', 'hook-b'],
      );
      assert.equal(children, 2);
      // At info, the 202s themselves logged nothing.
      assert.equal(lines.filter((l) => l.msg === 'request done').length, 0);
    } finally {
      server.close();
    }
  });
});
