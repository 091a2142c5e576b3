// Pay-or-expire in tests: pay/cancel calls, Redis' clock, and waiting until a sale has settled (every
// reservation persisted, every fate recorded in Postgres, every returned unit back on sale).
import assert from 'node:assert/strict';
import type pg from 'pg';
import { until } from '../../harness/async.ts';
import { admin, call, type Reply } from '../../harness/service.ts';
import type { RedisClient } from '../../src/redis/connection.ts';

export const pay = (url: string, orderId: string, userId: string): Promise<Reply> =>
  call(url, 'POST', `/api/orders/${orderId}/pay`, { userId });
export const cancel = (url: string, orderId: string, userId: string): Promise<Reply> =>
  call(url, 'POST', `/api/orders/${orderId}/cancel`, { userId });

/**
 * Waits until the product is quiescent — no reservation waiting for the writer, no fate waiting for
 * Postgres, no unit waiting to go back on sale — and asserts its reconcile; returns its admin status.
 */
export async function settled(
  url: string,
  client: RedisClient,
  productId: string,
  timeoutMs = 60_000,
): Promise<Record<string, unknown>> {
  let last: Reply | undefined;
  const status = await until(
    `${productId} settled`,
    async () => {
      last = await call(url, 'GET', `/admin/products/${productId}`, undefined, admin);
      if (last.status !== 200 || last.body.reserved !== 0 || last.body.returning !== 0) return undefined;
      return (await client.hlen(`sale:{${productId}}:settle`)) === 0 ? last.body : undefined;
    },
    { timeoutMs, everyMs: 50, describe: () => JSON.stringify(last?.body) },
  );
  const r = await call(url, 'GET', `/admin/products/${productId}/reconcile`, undefined, admin);
  assert.equal(r.body.ok, true, JSON.stringify(r.body));
  return status;
}

/** The statuses an order's row passed through (order_status_history), oldest first. */
export async function history(pool: pg.Pool, orderId: string): Promise<string[]> {
  const r = await pool.query(
    'select status from order_status_history where order_id = $1 order by at, status',
    [orderId],
  );
  return r.rows.map((row: { status: string }) => row.status);
}

/** Units in the product's rows by status. */
export async function rowUnits(pool: pg.Pool, productId: string): Promise<Record<string, number>> {
  const r = await pool.query(
    'select status, sum(quantity)::int as units from orders where product_id = $1 group by status',
    [productId],
  );
  return Object.fromEntries(r.rows.map((row: { status: string; units: number }) => [row.status, row.units]));
}
