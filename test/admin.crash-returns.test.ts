// Units of expired or cancelled orders go back on sale through a journaled change (SaleAdmin.returnUnits):
// an admin that dies between retiring the shards and switching loses nothing, and whoever finishes its
// change puts the units back exactly once.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { admin, call, createSale, placeOrder } from '../harness/service.ts';
import { decideFate } from '../src/orders/lifecycle.ts';
import type { OrderRecord } from '../src/orders/order.ts';
import { type Body, crashKit } from './support/admin-crash.ts';
import { useService } from './support/suite.ts';

// No sweep and no recovery of the service's own: the test looks at the pending state first.
const { infra, svc } = useService({ SWEEP_AGE_MS: '600000', EXPIRY_INTERVAL_MS: '3600000' });
const { status, reconcile, otherAdmin, dies } = crashKit(infra, svc);

describe('returning units when the admin dies', () => {
  it('the return is journaled with its units; the next admin finishes it once, and they sell again', async () => {
    const P = 'crash-return';
    await createSale(svc.url, P, { stock: 10, shards: 2, paymentTimeoutSec: 3600 });
    const orders: OrderRecord[] = [];
    for (const [i, quantity] of [2, 3].entries()) {
      const r = await placeOrder(svc.url, { productId: P, userId: `r${i}`, quantity });
      assert.equal(r.status, 202, JSON.stringify(r.body));
      orders.push(
        (await call(svc.url, 'GET', `/api/orders/${r.body.orderId}`, undefined, admin))
          .body as unknown as OrderRecord,
      );
    }
    // Cancelled in Redis (the one place fates are decided), with nobody putting the units back yet.
    for (const o of orders)
      assert.deepEqual(await decideFate(infra.client, o, 'cancel'), { fate: 'cancelled', now: true });
    const before = await status(P);
    assert.deepEqual([before.available, before.returning, before.sold], [5, 5, 0]);

    await dies((a) => a.returnUnits(P));
    const pending = await status(P);
    assert.deepEqual(pending.pending && { ...(pending.pending as Body), since: 0 }, {
      action: 'return',
      units: 5,
      since: 0,
    });
    // In transit, conserved: the retired shards' recorded stock, the units still waiting.
    assert.deepEqual([pending.available, pending.returning, pending.sold, pending.total], [5, 5, 0, 10]);
    assert.equal((await reconcile(P)).ok, true);

    // Another admin finishes the dead one's change (its 5 units) and finds nothing more to return.
    assert.equal(await otherAdmin((a) => a.returnUnits(P)), 0);
    const after = await status(P);
    assert.deepEqual([after.available, after.returning, after.returned, after.pending], [10, 0, 5, null]);
    assert.equal(await otherAdmin((a) => a.returnUnits(P)), 0, 'nothing returned twice');
    assert.equal((await status(P)).available, 10);
    // The returned units sell again.
    const again = await placeOrder(svc.url, { productId: P, userId: 'r9', quantity: 5 });
    assert.equal(again.status, 202, JSON.stringify(again.body));
    const end = await status(P);
    assert.deepEqual([end.available, end.returning, end.sold, end.total], [5, 0, 5, 10]);
    assert.equal((await reconcile(P)).ok, true);
  });
});
