// The client against the real service (a private Redis and Postgres): every final answer of
// placeOrder as its typed result, the wait for a sale's opening, a queued buyer who keeps its ticket
// and place while the line moves, abort, and the rest of the buyer's API.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { createSale, drained } from '../../../harness/service.ts';
import { advance, crowd } from '../../../test/support/crowd.ts';
import { useService } from '../../../test/support/suite.ts';
import { ApiError, FlashsaleClient, type Progress, UnreachableError } from '../src/index.ts';

const { infra, svc } = useService();
/** More buyers ahead than the service's own idle capacity drains while a test watches. */
const LONG_LINE = 2_000_000;

const buyer = (userId: string, stream = false) => new FlashsaleClient({ baseUrl: svc.url, userId, stream });

describe('placeOrder: final answers', () => {
  it('orders, and the order can be read, paid and cancelled', async () => {
    await createSale(svc.url, 'c-basic', { stock: 10, shards: 2, paymentTimeoutSec: 600 });
    const alice = buyer('alice');
    const result = await alice.placeOrder({ productId: 'c-basic', quantity: 2 });
    assert.equal(result.outcome, 'ordered');
    assert.ok(result.outcome === 'ordered');
    assert.deepEqual(
      { ...result.order, orderId: undefined },
      { orderId: undefined, status: 'reserved', productId: 'c-basic', userId: 'alice', quantity: 2 },
    );
    const view = await alice.order(result.order.orderId);
    assert.equal(view.userId, 'alice');
    assert.ok(typeof view.payBy === 'number' && view.payBy > Date.now() - 60_000, JSON.stringify(view));
    assert.deepEqual(await alice.pay(result.order.orderId), {
      orderId: result.order.orderId,
      status: 'paid',
    });
    const second = await alice.placeOrder({ productId: 'c-basic' });
    assert.ok(second.outcome === 'ordered');
    const cancelled = await alice.cancel(second.order.orderId);
    assert.deepEqual(cancelled, { orderId: second.order.orderId, status: 'cancelled' });
    const product = await alice.product('c-basic');
    assert.deepEqual([product.available, product.soldOut, product.paymentTimeoutSec], [8, false, 600]);
    const paid = await alice.pay(second.order.orderId).catch((err: unknown) => err);
    assert.ok(paid instanceof ApiError && paid.status === 409 && paid.error === 'order_cancelled');
  });

  it('sold out, limit exceeded, sale ended and unknown product are results; a bad request is an ApiError', async () => {
    await createSale(svc.url, 'c-one', { stock: 1, shards: 1, perUserLimit: 1 });
    const first = await buyer('bob').placeOrder({ productId: 'c-one' });
    assert.equal(first.outcome, 'ordered');
    assert.deepEqual(await buyer('bob').placeOrder({ productId: 'c-one' }), {
      outcome: 'limit_exceeded',
      limit: 1,
    });
    assert.deepEqual(await buyer('carol').placeOrder({ productId: 'c-one' }), {
      outcome: 'sold_out',
      available: 0,
    });
    const endsAt = new Date(Date.now() - 60_000).toISOString();
    await createSale(svc.url, 'c-ended', { stock: 5, shards: 1, endsAt });
    assert.deepEqual(await buyer('dave').placeOrder({ productId: 'c-ended' }), {
      outcome: 'sale_ended',
      endsAt: new Date(endsAt),
    });
    assert.deepEqual(await buyer('dave').placeOrder({ productId: 'c-none' }), { outcome: 'unknown_product' });
    const bad = await buyer('dave')
      .placeOrder({ productId: 'c-ended', quantity: 0 })
      .catch((err: unknown) => err);
    assert.ok(bad instanceof ApiError && bad.status === 400 && bad.error === 'invalid_request', String(bad));
    assert.equal((await drained(svc.url, 'c-one')).sold, 1);
  });

  it('an unreachable service is retried with backoff, then UnreachableError', async () => {
    // A port nothing listens on: every attempt is a network error.
    const closed = new FlashsaleClient({
      baseUrl: 'http://127.0.0.1:9',
      userId: 'erin',
      retry: { baseDelayMs: 1, maxDelayMs: 4, maxAttempts: 4 },
    });
    const seen: Progress[] = [];
    const err = await closed
      .placeOrder({ productId: 'c-one' }, { onProgress: (p) => seen.push(p) })
      .catch((e) => e);
    assert.ok(err instanceof UnreachableError && err.attempts === 4, String(err));
    assert.deepEqual(
      seen.map((p) => p.phase === 'retrying' && [p.reason, p.attempt]),
      [
        ['network', 1],
        ['network', 2],
        ['network', 3],
      ],
    );
  });
});

describe('placeOrder: waiting', () => {
  it('waits for the opening of a sale that has not started, then orders', async () => {
    const startsAt = new Date(Date.now() + 1500);
    await createSale(svc.url, 'c-soon', { stock: 3, shards: 1, startsAt: startsAt.toISOString() });
    const seen: Progress[] = [];
    const result = await buyer('frank').placeOrder(
      { productId: 'c-soon' },
      { onProgress: (p) => seen.push(p) },
    );
    assert.equal(result.outcome, 'ordered');
    const waits = seen.filter((p) => p.phase === 'waiting_for_start');
    assert.ok(waits.length >= 1, JSON.stringify(seen));
    assert.deepEqual(waits[0]?.phase === 'waiting_for_start' && waits[0].startsAt, startsAt);
  });

  it('a queued buyer keeps its ticket and place while the line moves, and is served once', async () => {
    await createSale(svc.url, 'c-line', { stock: 5, shards: 1 });
    const other = await crowd(infra.client, svc.url, 'c-line', LONG_LINE);
    const positions: number[] = [];
    // The other process serves half the line when the buyer is first told its place, the rest at the next.
    const onProgress = (p: Progress) => {
      if (p.phase !== 'queued') return;
      positions.push(p.position);
      void advance(other, 'c-line', positions.length === 1 ? LONG_LINE / 2 : LONG_LINE);
    };
    const result = await buyer('grace').placeOrder({ productId: 'c-line' }, { onProgress });
    other.room.stop();
    assert.equal(result.outcome, 'ordered');
    assert.ok(positions.length >= 2, JSON.stringify(positions));
    assert.ok((positions.at(-1) ?? Infinity) < (positions[0] ?? 0), `the position fell: ${positions}`);
    assert.equal((await drained(svc.url, 'c-line')).sold, 1);
  });

  it('abort while queued rejects with the signal’s reason and orders nothing', async () => {
    await createSale(svc.url, 'c-abort', { stock: 5, shards: 1 });
    const other = await crowd(infra.client, svc.url, 'c-abort', LONG_LINE);
    const controller = new AbortController();
    const order = buyer('heidi').placeOrder(
      { productId: 'c-abort' },
      { signal: controller.signal, onProgress: (p) => p.phase === 'queued' && controller.abort() },
    );
    await assert.rejects(order, { name: 'AbortError' });
    other.room.stop();
    const state = await drained(svc.url, 'c-abort');
    assert.deepEqual([state.sold, state.available], [0, 5]);
  });
});
