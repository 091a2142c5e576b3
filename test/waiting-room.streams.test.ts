// Streaming admission (DESIGN.md §4): a waiting buyer who asks for a stream is answered once. Its
// events follow the contract, its order is placed by the service when the line reaches it, a stream
// closed before its turn orders nothing, a sell-out ends every stream, and past the bound it polls.
// The line is moved by a stand-in process (test/support/crowd.ts), so no test depends on timing.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { until } from '../harness/async.ts';
import { admin, call, createSale, drained } from '../harness/service.ts';
import { crowd, LONG_LINE } from './support/crowd.ts';
import { data, streamOrder } from './support/event-stream.ts';
import { useService } from './support/suite.ts';

const { infra, svc } = useService();

/** Lets every buyer of the line in: the stand-in process reports the whole line served. */
async function passLine(other: Awaited<ReturnType<typeof crowd>>) {
  other.capacity.completed += 2 * LONG_LINE;
  await other.room.tick();
}

/** A streaming buyer behind the crowd: held on its stream, with its first queued event read. */
async function held(productId: string, userId: string) {
  const s = await streamOrder(svc.url, { productId, userId });
  assert.equal(s.status, 200, JSON.stringify(s.json));
  assert.match(s.headers.get('content-type') ?? '', /^text\/event-stream/);
  const first = await s.next();
  assert.equal(first?.event, 'queued');
  return { stream: s, queued: data(first) };
}

describe('streaming admission', () => {
  it('a waiting buyer gets queued at once with every field, then one result with its order, then the end', async () => {
    await createSale(svc.url, 'st-order', { stock: 5, shards: 1 });
    const other = await crowd(infra.client, svc.url, 'st-order');
    const { stream, queued } = await held('st-order', 'alice');
    assert.deepEqual(Object.keys(queued).sort(), ['available', 'etaMs', 'position', 'ticket']);
    assert.equal(queued.available, 5);
    assert.ok((queued.position as number) > 0, JSON.stringify(queued));
    assert.equal(stream.headers.get('queue-ticket'), queued.ticket);
    await passLine(other);
    const events = [];
    for (let e = await stream.next(); e; e = await stream.next()) events.push(e);
    const result = events.at(-1);
    assert.equal(result?.event, 'result', JSON.stringify(events));
    assert.deepEqual(
      events.slice(0, -1).map((e) => e.event),
      events.slice(0, -1).map(() => 'queued'),
    );
    // Coalesced: no queued event repeats the standing of the one before it.
    const standings = [queued, ...events.slice(0, -1).map(data)].map((q) => JSON.stringify(q));
    for (let i = 1; i < standings.length; i++) assert.notEqual(standings[i], standings[i - 1]);
    const { status, body } = data(result) as { status: number; body: Record<string, unknown> };
    assert.deepEqual([status, body.status, body.userId, body.quantity], [202, 'reserved', 'alice', 1]);
    // The ticket answers that same order again, streamed or not.
    const again = await streamOrder(
      svc.url,
      { productId: 'st-order', userId: 'alice' },
      { 'queue-ticket': String(queued.ticket) },
    );
    assert.deepEqual([again.status, again.json?.orderId], [202, body.orderId]);
    assert.equal((await drained(svc.url, 'st-order')).sold, 1);
    other.room.stop();
  });

  it('a stream closed before its turn orders nothing; the buyer after it gets the unit', async () => {
    await createSale(svc.url, 'st-gone', { stock: 1, shards: 1 });
    const other = await crowd(infra.client, svc.url, 'st-gone');
    const first = await held('st-gone', 'walks-away');
    const second = await held('st-gone', 'stays');
    first.stream.close();
    await until('the service to let the first stream go', async () => {
      const m = await (await fetch(`${svc.url}/metrics`)).text();
      return /^flashsale_streams_held 1$/m.test(m);
    });
    await passLine(other);
    let result = await second.stream.next();
    while (result?.event === 'queued') result = await second.stream.next();
    const { status, body } = data(result) as { status: number; body: Record<string, unknown> };
    assert.deepEqual([status, body.userId], [202, 'stays']);
    const admin_ = await drained(svc.url, 'st-gone');
    assert.equal(admin_.sold, 1, 'one order: the buyer who stayed');
    other.room.stop();
  });

  it('sold out while streams wait: every stream gets its 409 sold_out result', async () => {
    await createSale(svc.url, 'st-sold', { stock: 3, shards: 1 });
    const other = await crowd(infra.client, svc.url, 'st-sold');
    const streams = [];
    for (const user of ['w1', 'w2', 'w3']) streams.push((await held('st-sold', user)).stream);
    const r = await call(svc.url, 'POST', '/admin/products/st-sold/restock', { delta: -3 }, admin);
    assert.equal(r.status, 200, JSON.stringify(r.body));
    for (const s of streams) {
      let e = await s.next();
      while (e?.event === 'queued') e = await s.next();
      assert.equal(e?.event, 'result');
      const { status, body } = data(e) as { status: number; body: Record<string, unknown> };
      assert.deepEqual([status, body.error], [409, 'sold_out']);
      assert.equal(await s.next(), undefined, 'the stream ends after its result');
    }
    other.room.stop();
  });
});

describe('streamed orders keep the rules of every order', () => {
  it('the per-user limit and the Idempotency-Key hold for orders the service places for held buyers', async () => {
    const put = { stock: 5, shards: 1, perUserLimit: 1 };
    assert.equal((await call(svc.url, 'PUT', '/admin/products/st-rules', put, admin)).status, 201);
    const other = await crowd(infra.client, svc.url, 'st-rules');
    const order = { productId: 'st-rules', userId: 'dana' };
    const streams = [];
    for (const key of ['k-one', 'k-two']) {
      const s = await streamOrder(svc.url, order, { 'idempotency-key': key });
      assert.equal(s.status, 200, JSON.stringify(s.json));
      streams.push(s);
    }
    await passLine(other);
    const results = [];
    for (const s of streams) {
      let e = await s.next();
      while (e?.event === 'queued') e = await s.next();
      results.push(data(e) as { status: number; body: Record<string, unknown> });
    }
    assert.deepEqual(results.map((r) => r.status).sort(), [202, 409], JSON.stringify(results));
    assert.equal(results.find((r) => r.status === 409)?.body.error, 'limit_exceeded');
    // The key of the placed order (with its ticket: its place in the line) answers it again, polling.
    const placed = results.findIndex((r) => r.status === 202);
    const headers = {
      'idempotency-key': placed === 0 ? 'k-one' : 'k-two',
      'queue-ticket': streams[placed]?.headers.get('queue-ticket') as string,
    };
    const again = await call(svc.url, 'POST', '/api/orders', order, headers);
    assert.deepEqual([again.status, again.body.orderId], [202, results[placed]?.body.orderId]);
    assert.equal((await drained(svc.url, 'st-rules')).sold, 1);
    other.room.stop();
  });
});

describe('streaming admission past the bound', () => {
  const bounded = useService({ WAITING_ROOM_MAX_STREAMS: '1' });

  it('the second waiting buyer gets 429 queued and polls to its order', async () => {
    const url = bounded.svc.url;
    await createSale(url, 'st-bound', { stock: 5, shards: 1 });
    const other = await crowd(bounded.infra.client, url, 'st-bound');
    const first = await streamOrder(url, { productId: 'st-bound', userId: 'first' });
    assert.equal(first.status, 200);
    const ready = await call(url, 'GET', '/readyz');
    assert.deepEqual([ready.status, ready.body.streams], [200, { held: 1, max: 1 }]);
    const second = await streamOrder(url, { productId: 'st-bound', userId: 'second' });
    assert.deepEqual([second.status, second.json?.error], [429, 'queued'], JSON.stringify(second.json));
    const ticket = String(second.json?.ticket);
    await passLine(other);
    const placed = await until('the polling buyer to be placed', async () => {
      const r = await call(
        url,
        'POST',
        '/api/orders',
        { productId: 'st-bound', userId: 'second' },
        { 'queue-ticket': ticket },
      );
      assert.ok([202, 429].includes(r.status), JSON.stringify(r.body));
      return r.status === 202 ? r : undefined;
    });
    assert.equal(placed.body.userId, 'second');
    const m = await (await fetch(`${url}/metrics`)).text();
    assert.match(m, /^flashsale_streams_refused_total 1$/m);
    first.close();
    other.room.stop();
  });
});
