// Races of pay-or-expire over HTTP: 200 payments aimed at their orders' deadlines while the expiry
// sweep runs (each order ends paid or expired, never both, and only expired units come back), pay
// against cancel and pay against pay (one winner, and asking again answers the same).
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { redisNow } from '../harness/async.ts';
import { ordered } from '../harness/buyers.ts';
import { call, createSale } from '../harness/service.ts';
import { cancel, history, pay, rowUnits, settled } from './support/lifecycle.ts';
import { useService } from './support/suite.ts';

const { infra, svc } = useService({ EXPIRY_INTERVAL_MS: '20' });

const order = (productId: string, userId: string, quantity = 1) =>
  ordered(svc.url, productId, userId, quantity);

describe('pay against expiry at the deadline', () => {
  it('200 orders paid at their deadline while the sweep expires them: exactly one fate each', async (t) => {
    await createSale(svc.url, 'race-1', { stock: 400, shards: 4, paymentTimeoutSec: 2 });
    const ids = await Promise.all(Array.from({ length: 200 }, (_, i) => order('race-1', `buyer-${i}`, 2)));
    const payBys = await Promise.all(
      ids.map(async (id) => (await call(svc.url, 'GET', `/api/orders/${id}`)).body.payBy as number),
    );
    // Aim each payment at its deadline (give or take 25 ms) on Redis' clock; the outcome is read back,
    // never inferred from the timing.
    const offset = (await redisNow(infra.client)) - Date.now();
    const answers = await Promise.all(
      ids.map(async (id, i) => {
        const wait = (payBys[i] as number) - offset - Date.now() + ((i % 51) - 25);
        if (wait > 0) await sleep(wait);
        return pay(svc.url, id, `buyer-${i}`);
      }),
    );
    const fates = answers.map((r, i) => {
      if (r.status === 200) return 'paid';
      assert.deepEqual(
        [r.status, r.body.error],
        [409, 'order_expired'],
        `${ids[i]}: ${JSON.stringify(r.body)}`,
      );
      return 'expired';
    });
    const s = await settled(svc.url, infra.client, 'race-1');
    const paid = fates.filter((f) => f === 'paid').length;
    const expired = 200 - paid;
    t.diagnostic(`paid ${paid}, expired ${expired}`);
    // Paid units stay sold; exactly the expired orders' units are back on sale.
    assert.deepEqual(
      [s.sold, s.paid, s.returned, s.available],
      [2 * paid, 2 * paid, 2 * expired, 400 - 2 * paid],
    );
    assert.deepEqual(s.orders, { paid, expired, cancelled: 0 });
    assert.deepEqual(await rowUnits(infra.pool, 'race-1'), {
      ...(paid > 0 && { paid: 2 * paid }),
      ...(expired > 0 && { expired: 2 * expired }),
    });
    for (const [i, id] of ids.entries()) {
      const status = (await call(svc.url, 'GET', `/api/orders/${id}`)).body.status;
      assert.equal(status, fates[i], id);
      assert.deepEqual(await history(infra.pool, id), ['reserved', 'confirmed', fates[i]]);
      // Asking again answers the same.
      assert.equal((await pay(svc.url, id, `buyer-${i}`)).status, fates[i] === 'paid' ? 200 : 409);
    }
  });
});

describe('pay against cancel, pay against pay', () => {
  it('pay and cancel at once: one wins, and both asked again answer as they did', async () => {
    await createSale(svc.url, 'race-2', { stock: 40, shards: 2, paymentTimeoutSec: 3600 });
    const ids = await Promise.all(Array.from({ length: 20 }, (_, i) => order('race-2', `u${i}`)));
    const firsts = await Promise.all(
      ids.map((id, i) => Promise.all([pay(svc.url, id, `u${i}`), cancel(svc.url, id, `u${i}`)])),
    );
    let cancelled = 0;
    for (const [i, [p, c]] of firsts.entries()) {
      const answers = [p.status, p.body.error ?? p.body.status, c.status, c.body.error ?? c.body.status];
      if (p.status === 200) assert.deepEqual(answers, [200, 'paid', 409, 'already_paid'], ids[i]);
      else {
        assert.deepEqual(answers, [409, 'order_cancelled', 200, 'cancelled'], ids[i]);
        cancelled += 1;
      }
      const [p2, c2] = [
        await pay(svc.url, ids[i] as string, `u${i}`),
        await cancel(svc.url, ids[i] as string, `u${i}`),
      ];
      assert.deepEqual([p2.status, p2.body, c2.status, c2.body], [p.status, p.body, c.status, c.body]);
    }
    const s = await settled(svc.url, infra.client, 'race-2');
    assert.deepEqual([s.sold, s.available, s.returned], [20 - cancelled, 20 + cancelled, cancelled]);
  });

  it('double pay at once: both answer paid, and the order is paid once', async () => {
    await createSale(svc.url, 'race-3', { stock: 10, shards: 2, paymentTimeoutSec: 3600 });
    const ids = await Promise.all(Array.from({ length: 10 }, (_, i) => order('race-3', `v${i}`)));
    const answers = await Promise.all(
      ids.map((id, i) => Promise.all([pay(svc.url, id, `v${i}`), pay(svc.url, id, `v${i}`)])),
    );
    for (const [i, [a, b]] of answers.entries()) {
      assert.deepEqual(
        [a.status, a.body, b.status, b.body],
        [200, { orderId: ids[i], status: 'paid' }, 200, { orderId: ids[i], status: 'paid' }],
      );
    }
    const s = await settled(svc.url, infra.client, 'race-3');
    assert.deepEqual([s.sold, s.paid, s.orders], [10, 10, { paid: 10, expired: 0, cancelled: 0 }]);
  });
});
