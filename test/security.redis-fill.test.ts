// No request can fill Redis (issue 25): a refusal — sold out, not started, unknown product, over the
// per-user limit, invalid — stores nothing under its Idempotency-Key, and leaves no per-user count.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { Redis } from 'ioredis';
import { call, createSale } from '../harness/service.ts';
import { idempotencyKey } from '../src/orders/keys.ts';
import { useService } from './support/suite.ts';

const { infra, svc } = useService();

/** Keys matching `pattern` in the private Redis. */
async function keys(client: Redis, pattern: string): Promise<string[]> {
  const found: string[] = [];
  let cursor = '0';
  do {
    const [next, batch] = await client.scan(cursor, 'MATCH', pattern, 'COUNT', 1000);
    found.push(...batch);
    cursor = next;
  } while (cursor !== '0');
  return found;
}

/** Runs `n` calls of `fn`, `concurrency` at a time; answers the count of each status. */
async function storm(n: number, concurrency: number, fn: (i: number) => Promise<number>) {
  const tally: Record<number, number> = {};
  let next = 0;
  const worker = async () => {
    for (let i = next++; i < n; i = next++) {
      const status = await fn(i);
      tally[status] = (tally[status] ?? 0) + 1;
    }
  };
  await Promise.all(Array.from({ length: concurrency }, worker));
  return tally;
}

describe('no request can fill Redis', () => {
  it('10,000 orders with fresh Idempotency-Keys for a sold-out product leave no key in Redis', async () => {
    await createSale(svc.url, 'gone', { stock: 1, shards: 2 });
    const first = { 'idempotency-key': 'first-checkout' };
    const sold = await call(svc.url, 'POST', '/api/orders', { productId: 'gone', userId: 'first' }, first);
    assert.equal(sold.status, 202);
    const tally = await storm(10_000, 32, async (i) => {
      const r = await call(
        svc.url,
        'POST',
        '/api/orders',
        { productId: 'gone', userId: `bot-${i % 100}` },
        { 'idempotency-key': `fresh-${i}` },
      );
      return r.status;
    });
    assert.deepEqual(tally, { 409: 10_000 });
    // Only the key of the order that was sold.
    assert.deepEqual(await keys(infra.client, 'idem:*'), [idempotencyKey('first', 'first-checkout')]);
    assert.deepEqual(await keys(infra.client, 'buyer:*'), []);
    // Its retry, after the sale sold out, still answers that order.
    const retried = await call(svc.url, 'POST', '/api/orders', { productId: 'gone', userId: 'first' }, first);
    assert.deepEqual([retried.status, retried.body.orderId], [202, sold.body.orderId]);
  });

  it('refusals of every kind store nothing under their key, nor a per-user count', async () => {
    const startsAt = new Date(Date.now() + 3_600_000).toISOString();
    await createSale(svc.url, 'later', { stock: 5, shards: 1, startsAt });
    await createSale(svc.url, 'limited', { stock: 5, shards: 1, perUserLimit: 1 });
    await createSale(svc.url, 'scarce', { stock: 1, shards: 2, perUserLimit: 5 });
    assert.equal(
      (await call(svc.url, 'POST', '/api/orders', { productId: 'limited', userId: 'lim' })).status,
      202,
    );
    const before = new Set(await keys(infra.client, '*'));
    const refused: Array<[object, number, string]> = [
      [{ productId: 'later', userId: 'u1' }, 409, 'not_started'],
      [{ productId: 'nobody', userId: 'u2' }, 404, 'unknown_product'],
      [{ productId: 'limited', userId: 'lim' }, 409, 'limit_exceeded'],
      // A lot bigger than the stock: the limit is claimed, then given back with the refusal.
      [{ productId: 'scarce', userId: 'u3', quantity: 2 }, 409, 'insufficient_stock'],
      [{ productId: 'later', userId: 'bad user' }, 400, 'invalid_request'],
    ];
    for (const [i, [body, status, error]] of refused.entries()) {
      const r = await call(svc.url, 'POST', '/api/orders', body, { 'idempotency-key': `refused-${i}` });
      assert.deepEqual([r.status, r.body.error], [status, error], JSON.stringify(body));
    }
    const added = (await keys(infra.client, '*')).filter((k) => !before.has(k));
    assert.deepEqual(
      added.filter((k) => k.startsWith('idem:') || k.startsWith('buyer:')),
      [],
      'no Idempotency-Key, no per-user count',
    );
  });
});
