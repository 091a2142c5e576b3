// GET /admin/products/:id/live (the dashboard's JSON): admin-only, bad input refused, the same sale
// numbers as GET /admin/products/:id, outcome counts that add up to the orders placed, the product's
// history with its orders' fates, one status read for any number of concurrent polls. Plus the metrics behind the alerts: writer lag, reconcile gauge.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Queue } from 'bullmq';
import { until } from '../harness/async.ts';
import { admin, call, createSale, drained } from '../harness/service.ts';
import { shardStockKey } from '../src/inventory/keys.ts';
import { oldestJobAge } from '../src/metrics.ts';
import { LiveView } from '../src/ops/live.ts';
import { reconcileAll } from '../src/ops/reconcile-watch.ts';
import { failedJobsOf } from '../src/orders/failed-jobs.ts';
import { createOrderQueue } from '../src/orders/queue.ts';
import { cancel, pay } from './support/lifecycle.ts';
import { useService } from './support/suite.ts';

interface Live {
  sale: Record<string, unknown> & { failedJobs: { count: number } };
  queue: { waiting: number; active: number; delayed: number; failed: number; lagSeconds: number };
  rates: {
    t: number;
    seconds: number;
    ordersPerSecond: Record<string, number>;
    invalidTicketsPerSecond: number;
  }[];
}

const live = (url: string, productId: string, headers: Record<string, string> = admin, query = '') =>
  call(url, 'GET', `/admin/products/${productId}/live${query}`, undefined, headers);

/** Orders of each outcome over the whole rate history (rate x interval, summed). */
function counted(body: Live, group: string): number {
  return Math.round(body.rates.reduce((sum, p) => sum + (p.ordersPerSecond[group] ?? 0) * p.seconds, 0));
}

describe('GET /admin/products/:id/live', () => {
  const { infra, svc } = useService();

  it('needs the admin token and refuses bad input with a code', async () => {
    await createSale(svc.url, 'live-auth', { stock: 5, shards: 1 });
    assert.equal((await live(svc.url, 'live-auth', {})).status, 401);
    const wrong = await live(svc.url, 'live-auth', { authorization: 'Bearer nope' });
    assert.equal(wrong.status, 401);
    assert.equal(wrong.body.error, 'unauthorized');
    assert.equal(wrong.body.sale, undefined);
    const badSince = await live(svc.url, 'live-auth', admin, '?since=yesterday');
    assert.equal(badSince.status, 400);
    assert.equal(badSince.body.error, 'invalid_request');
    assert.equal(badSince.body.field, 'since');
    const badId = await live(svc.url, 'bad%20id');
    assert.equal(badId.status, 400);
    const unknown = await live(svc.url, 'live-nope');
    assert.equal(unknown.status, 404);
    assert.equal(unknown.body.error, 'unknown_product');
  });

  it('counts orders refused for an invalid waiting-room ticket', async () => {
    await createSale(svc.url, 'live-tickets', { stock: 5, shards: 1 });
    await live(svc.url, 'live-tickets');
    const forged = await call(
      svc.url,
      'POST',
      '/api/orders',
      { productId: 'live-tickets', userId: 'mallory' },
      { 'queue-ticket': 't1.live-tickets.mallory.1.forged' },
    );
    assert.deepEqual([forged.status, forged.body.error], [400, 'invalid_ticket']);
    await until(
      'the live history to count the invalid ticket',
      async () => {
        const b = (await live(svc.url, 'live-tickets')).body as unknown as Live;
        const n = b.rates.reduce((sum, p) => sum + p.invalidTicketsPerSecond * p.seconds, 0);
        return Math.round(n) >= 1 || undefined;
      },
      { everyMs: 200 },
    );
  });

  it('shows what GET /admin/products/:id shows, and counts every answer by outcome', async () => {
    await createSale(svc.url, 'live-p', { stock: 30, shards: 4 });
    // The first poll starts the sampler: everything after it is counted.
    const first = await live(svc.url, 'live-p');
    assert.equal(first.status, 200);
    assert.equal((first.body as unknown as Live).sale.available, 30);
    const statuses: number[] = [];
    for (let i = 0; i < 40; i++) {
      statuses.push(
        (await call(svc.url, 'POST', '/api/orders', { productId: 'live-p', userId: `u${i}` })).status,
      );
    }
    assert.deepEqual(
      [statuses.filter((s) => s === 202).length, statuses.filter((s) => s === 409).length],
      [30, 10],
    );
    const status = await drained(svc.url, 'live-p');
    // The sampler folds answers into its history once a second: wait until it holds every answer
    // (both outcomes, since a sample may fall between the last 202 and the last 409).
    const body = await until(
      'the live history to count all 40 answers',
      async () => {
        const b = (await live(svc.url, 'live-p')).body as unknown as Live;
        const done = counted(b, 'accepted') + counted(b, 'sold_out') >= 40 && b.sale.confirmed === 30;
        return done ? b : undefined;
      },
      { everyMs: 200 },
    );
    assert.equal(counted(body, 'accepted'), 30);
    assert.equal(counted(body, 'sold_out'), 10);
    assert.equal(counted(body, 'busy'), 0);
    assert.equal(counted(body, 'errors_5xx'), 0);
    const { failedJobs, ...rest } = status as Record<string, unknown> & { failedJobs: { count: number } };
    for (const [key, value] of Object.entries(rest)) assert.deepEqual(body.sale[key], value, key);
    assert.equal(body.sale.failedJobs.count, failedJobs.count);
    assert.equal(body.sale.soldOut, true);
    assert.deepEqual(
      [body.queue.waiting, body.queue.delayed, body.queue.lagSeconds],
      [0, 0, 0],
      'the writer drained the queue',
    );
    // `since` leaves out the history the caller has.
    const last = body.rates.at(-1)?.t ?? 0;
    const later = (await live(svc.url, 'live-p', admin, `?since=${last}`)).body as unknown as Live;
    assert.ok(later.rates.every((p) => p.t > last));
  });

  it("the product's history carries its orders' fates: awaiting payment, paid, expired, cancelled", async () => {
    await createSale(svc.url, 'live-fates', { stock: 5, shards: 1, paymentTimeoutSec: 2 });
    await live(svc.url, 'live-fates');
    const placed: string[] = [];
    for (const userId of ['payer', 'canceller', 'forgetful', 'waiter']) {
      const r = await call(svc.url, 'POST', '/api/orders', { productId: 'live-fates', userId });
      assert.equal(r.status, 202, JSON.stringify(r.body));
      placed.push(r.body.orderId as string);
    }
    assert.equal((await pay(svc.url, placed[0] as string, 'payer')).status, 200);
    assert.equal((await cancel(svc.url, placed[1] as string, 'canceller')).status, 200);
    // The other two are left unpaid: both expire.
    const fates = (p: Record<string, number>) => [p.paid, p.awaitingPayment, p.expired, p.cancelled];
    const body = await until(
      'the live history to show both unpaid orders expired',
      async () => {
        const b = (await live(svc.url, 'live-fates')).body as unknown as Live & {
          saleHistory: Record<string, number>[];
        };
        const last = b.saleHistory.at(-1);
        return last && last.expired === 2 && b.sale.awaitingPayment === 0 ? b : undefined;
      },
      { everyMs: 200 },
    );
    const last = body.saleHistory.at(-1) as Record<string, number>;
    assert.deepEqual(fates(last), [1, 0, 2, 1]);
    const orders = body.sale.orders as { paid: number; expired: number; cancelled: number };
    assert.deepEqual([orders.paid, orders.expired, orders.cancelled], [1, 2, 1]);
    assert.deepEqual([last.sold, last.returned], [body.sale.sold, body.sale.returned]);
    // Nobody waits in the waiting room of a sale this quiet.
    assert.equal((body as unknown as { waitingRoom: unknown }).waitingRoom, null);
  });

  it('concurrent polls of a product share one status read', async () => {
    await createSale(svc.url, 'live-c', { stock: 10, shards: 2 });
    const queue = createOrderQueue(infra.env.REDIS_URL as string);
    let reads = 0;
    const view = new LiveView({
      views: {
        redis: svc.rt.redis,
        db: svc.rt.db,
        failedJobsOf: (productId) => {
          reads += 1;
          return failedJobsOf(queue, productId);
        },
      },
      metrics: svc.rt.metrics,
    });
    try {
      const answers = await Promise.all(Array.from({ length: 20 }, () => view.product('live-c')));
      assert.equal(reads, 1);
      assert.ok(answers.every((a) => a.sale.available === 10));
    } finally {
      view.stop();
      await queue.close();
    }
  });
});

describe('metrics behind the alerts', () => {
  const { infra, svc } = useService();

  it('writer lag: the age of the oldest job not yet written, 0 when none waits', async () => {
    // A queue nobody consumes, on the private Redis.
    const queue = new Queue('lag-probe', { connection: { host: '127.0.0.1', port: infra.redis.port } });
    try {
      assert.equal(await oldestJobAge(queue), 0);
      await queue.add('old', {}, { timestamp: Date.now() - 30_000 });
      await queue.add('new', {});
      const age = await oldestJobAge(queue);
      assert.ok(age >= 30 && age < 300, `age ${age}`);
    } finally {
      await queue.obliterate({ force: true });
      await queue.close();
    }
  });

  it('reconcile gauge: 0 for sound sales, the number of products that differ after stock appears from nowhere', async () => {
    await createSale(svc.url, 'rec-a', { stock: 20, shards: 2 });
    const generation = await createSale(svc.url, 'rec-b', { stock: 20, shards: 2 });
    assert.equal(
      (await call(svc.url, 'POST', '/api/orders', { productId: 'rec-a', userId: 'x' })).status,
      202,
    );
    const deps = { redis: svc.rt.redis, db: svc.rt.db, metrics: svc.rt.metrics };
    assert.equal(await reconcileAll(deps), 0);
    // Five units nobody put on sale: available + sold != total.
    await infra.client.incrby(shardStockKey('rec-b', generation, 0), 5);
    assert.equal(await reconcileAll(deps), 1);
    const text = await (await fetch(`${svc.url}/metrics`)).text();
    assert.match(text, /^flashsale_reconcile_differences 1$/m);
    assert.match(text, /^flashsale_reconcile_products_checked 2$/m);
    const rec = await call(svc.url, 'GET', '/admin/products/rec-b/reconcile', undefined, admin);
    assert.equal(rec.body.ok, false);
  });
});
