// A sale's settings in sight: GET /admin/products/:id, its live view and `flashsale status` (text and
// --json) show the opening and closing times, payment timeout, per-user limit and lottery window as
// PUT answered them (no per-user limit is null in both); each generation change is recorded with who
// made it; an order's payment deadline is ISO 8601 (paymentDueAt) besides payBy's epoch ms.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ADMIN_TOKEN, admin, call } from '../harness/service.ts';
import { type CliIo, main } from '../src/cli.ts';
import { useService } from './support/suite.ts';

const HOUR_MS = 3_600_000;
const SETTINGS = ['startsAt', 'endsAt', 'paymentTimeoutSec', 'perUserLimit', 'queue'] as const;

describe('the settings of a sale, where an operator looks', () => {
  const { svc } = useService();
  const put = (productId: string, body: Record<string, unknown>) =>
    call(svc.url, 'PUT', `/admin/products/${productId}`, body, admin);
  const get = async (path: string) => (await call(svc.url, 'GET', path, undefined, admin)).body;

  /** `flashsale <args>` in this process: what it printed. */
  async function flashsale(...args: string[]): Promise<string> {
    let out = '';
    const io: CliIo = {
      out: (t) => {
        out += t;
      },
      err: (t) => assert.fail(`stderr: ${t}`),
      env: { BASE_URL: svc.url, ADMIN_TOKEN },
      fetch: (...a) => fetch(...a),
    };
    assert.equal(await main(args, io), 0);
    return out;
  }

  it('GET /admin/products/:id, the live view and flashsale status show what PUT set', async () => {
    const startsAt = new Date(Date.now() - HOUR_MS).toISOString();
    const endsAt = new Date(Date.now() + HOUR_MS).toISOString();
    const set = await put('set-all', {
      stock: 20,
      shards: 2,
      startsAt,
      endsAt,
      paymentTimeoutSec: 90,
      perUserLimit: 2,
      queue: { lotterySeconds: 10 },
    });
    assert.equal(set.status, 201, JSON.stringify(set.body));
    const status = await get('/admin/products/set-all');
    const live = (await get('/admin/products/set-all/live')).sale as Record<string, unknown>;
    const { lottery } = set.body.queue as { lottery: { lotterySeconds: number; closesAt: string } };
    for (const field of SETTINGS.slice(0, 4)) {
      assert.deepEqual(status[field], set.body[field], field);
      assert.deepEqual(live[field], set.body[field], `live ${field}`);
    }
    assert.deepEqual([status.startsAt, status.endsAt, status.paymentTimeoutSec], [startsAt, endsAt, 90]);
    // The lottery as the product page shows it (drawn an hour ago: its seed is public now).
    const shownLottery = (status.queue as { lottery: Record<string, unknown> }).lottery;
    assert.deepEqual([shownLottery.lotterySeconds, shownLottery.closesAt], [10, lottery.closesAt]);
    assert.deepEqual(status.queue, (await call(svc.url, 'GET', '/api/products/set-all')).body.queue);

    const text = await flashsale('status', 'set-all');
    for (const line of [
      `opens            ${startsAt}`,
      `closes           ${endsAt}`,
      'payment timeout  90 s',
      'per-user limit   2',
      `lottery          first 10 s, drawn at ${lottery.closesAt}`,
      'orders           awaiting payment 0, paid 0, expired 0, cancelled 0',
    ]) {
      assert.ok(text.includes(`\n${line}\n`), `${line}\nin:\n${text}`);
    }
    assert.deepEqual(
      JSON.parse(await flashsale('status', 'set-all', '--json')),
      await get('/admin/products/set-all'),
    );
  });

  it('a sale without settings says so: no per-user limit is null in PUT and GET alike', async () => {
    const set = await put('set-none', { stock: 5, shards: 1 });
    assert.equal(set.status, 201, JSON.stringify(set.body));
    const status = await get('/admin/products/set-none');
    assert.equal(set.body.perUserLimit, null);
    assert.equal(status.perUserLimit, null);
    for (const field of SETTINGS.filter((f) => f !== 'perUserLimit')) {
      assert.equal(field in status, false, field);
      assert.equal(field in set.body, false, field);
    }
    const text = await flashsale('status', 'set-none');
    for (const line of [
      'opens            at once (no start time)',
      'closes           never (no end time)',
      'payment timeout  none (no payment needed)',
      'per-user limit   none',
      'lottery          none (first come, first served)',
    ]) {
      assert.ok(text.includes(`\n${line}\n`), `${line}\nin:\n${text}`);
    }
  });

  it('each generation change is recorded with who made it, newest first', async () => {
    await put('set-changes', { stock: 10, shards: 8 });
    await call(svc.url, 'POST', '/admin/products/set-changes/restock', { delta: 2 }, admin);
    // 12 units over 8 shards (2, 2, 2, 2, 1, 1, 1, 1): an order for 3 makes the service regroup them.
    const order = await call(svc.url, 'POST', '/api/orders', {
      productId: 'set-changes',
      userId: 'u',
      quantity: 3,
    });
    assert.equal(order.status, 202, JSON.stringify(order.body));
    const status = await get('/admin/products/set-changes');
    const changes = status.changes as { generation: number; kind: string; by: string; shards: number }[];
    assert.deepEqual(
      changes.map(({ generation, kind, by, shards }) => ({ generation, kind, by, shards })),
      [
        { generation: 3, kind: 'resharded', by: 'consolidation', shards: 4 },
        { generation: 2, kind: 'restocked', by: 'admin', shards: 8 },
        { generation: 1, kind: 'created', by: 'admin', shards: 8 },
      ],
    );
    const text = await flashsale('status', 'set-changes');
    assert.match(
      text,
      /\nlast change +resharded \(generation 3, 4 shards\) by the service's sold-out consolidation at /,
    );
  });

  it("an order's payment deadline: paymentDueAt (ISO 8601) is payBy (epoch ms)", async () => {
    await put('set-pay', { stock: 5, shards: 1, paymentTimeoutSec: 600 });
    const placed = await call(svc.url, 'POST', '/api/orders', { productId: 'set-pay', userId: 'u' });
    assert.equal(placed.status, 202, JSON.stringify(placed.body));
    const order = await get(`/api/orders/${placed.body.orderId}`);
    assert.equal(typeof order.payBy, 'number');
    assert.equal(order.paymentDueAt, new Date(order.payBy as number).toISOString());
  });
});
