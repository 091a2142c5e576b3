// The order-path storm over HTTP: 2,000 concurrent orders for 500 units over 8 shards must sell exactly
// the stock, one row per accepted order, nothing left reserved (run on every lock backend).
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import {
  admin,
  call,
  createSale,
  drained,
  type Infra,
  placeOrder,
  type Service,
} from '../../harness/service.ts';

export interface StormOptions {
  /**
   * Retry a 503 unavailable, as a client does after its Retry-After (a shorter pause here). For a lock
   * service (etcd, ZooKeeper) whose round trip, on a loaded 2-core machine, can outlast the one second
   * a try is given (ROUND_TRIP_MS): that order was told the truth, nothing sold, and tries again. A
   * 503 that hid a sale would still fail the storm: one 202 short, or a unit sold twice.
   */
  retryUnavailable?: boolean;
}

/** One buyer's order until it is answered other than busy, queued or (with the option) unavailable. */
async function settledOrder(url: string, productId: string, userId: string, o: StormOptions) {
  for (let attempt = 1; ; attempt++) {
    const r = await placeOrder(url, { productId, userId });
    if (!(o.retryUnavailable && r.status === 503 && r.body.error === 'unavailable' && attempt < 20)) return r;
    await sleep(50 * attempt);
  }
}

export async function orderStorm(
  svc: Service,
  infra: Infra,
  productId = 'storm',
  options: StormOptions = {},
): Promise<void> {
  await createSale(svc.url, productId, { stock: 500, shards: 8 });
  const statuses = new Map<number, number>();
  const inFlight = 400;
  let next = 0;
  await Promise.all(
    Array.from({ length: inFlight }, async () => {
      while (next < 2000) {
        const i = next++;
        // A busy answer (a lock wait past LOCK_WAIT_MS on a loaded machine) comes back, as real clients do.
        const r = await settledOrder(svc.url, productId, `u${i}`, options);
        statuses.set(r.status, (statuses.get(r.status) ?? 0) + 1);
      }
    }),
  );
  assert.equal(statuses.get(202), 500, JSON.stringify([...statuses]));
  assert.equal(statuses.get(409), 1500, JSON.stringify([...statuses]));
  const status = await drained(svc.url, productId);
  assert.equal(status.available, 0);
  assert.equal(status.sold, 500);
  assert.equal(status.confirmed, 500);
  assert.equal(await infra.rows(productId), 500);
  const rec = await call(svc.url, 'GET', `/admin/products/${productId}/reconcile`, undefined, admin);
  assert.equal(rec.body.ok, true, JSON.stringify(rec.body));
}
