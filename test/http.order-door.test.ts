// The order door (src/http/order-door.ts) owns POST /api/orders. Its two body readers answer alike:
// each request is sent plain (JSON of a known length, read by the door itself) and chunked (read by
// express's JSON reader), and the two answers are compared whole. Every answer is counted exactly
// once, by outcome; a body over the limit is refused from its Content-Length before it is sent.
import assert from 'node:assert/strict';
import { request } from 'node:http';
import { connect } from 'node:net';
import { describe, it } from 'node:test';
import { createSale } from '../harness/service.ts';
import { scrape } from './support/metrics.ts';
import { useService } from './support/suite.ts';

interface Raw {
  status: number;
  body: string;
  headers: Record<string, string | string[] | undefined>;
}

/** One POST /api/orders: with Content-Length (the door's own reader), or chunked (express's reader). */
function post(
  url: string,
  body: Buffer,
  chunked: boolean,
  headers: Record<string, string> = {},
): Promise<Raw> {
  return new Promise((resolve, reject) => {
    const req = request(
      `${url}/api/orders`,
      {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          ...(chunked ? { 'transfer-encoding': 'chunked' } : { 'content-length': String(body.length) }),
          ...headers,
        },
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () =>
          resolve({
            status: res.statusCode ?? 0,
            body: Buffer.concat(chunks).toString(),
            headers: res.headers,
          }),
        );
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

const json = (v: unknown) => Buffer.from(JSON.stringify(v));

describe('the order door reads every body alike', () => {
  const { svc } = useService();

  it('refusals known from memory, bad bodies and bad headers: the same status, body and headers both ways', async () => {
    await createSale(svc.url, 'lane-sold', { stock: 1, shards: 1 });
    const first = await post(svc.url, json({ productId: 'lane-sold', userId: 'first' }), false);
    assert.equal(first.status, 202, first.body);
    const later = new Date(Date.now() + 3_600_000).toISOString();
    await createSale(svc.url, 'lane-later', { stock: 5, shards: 1, startsAt: later });
    const cases: Array<[string, Buffer, Record<string, string>?]> = [
      ['sold out', json({ productId: 'lane-sold', userId: 'late' })],
      ['not started', json({ productId: 'lane-later', userId: 'early' })],
      ['not JSON', Buffer.from('{oops')],
      ['not an object', Buffer.from('"just a string"')],
      ['not UTF-8', Buffer.from([0x7b, 0x22, 0xff, 0xfe, 0x22, 0x7d])],
      ['a field missing', json({ userId: 'nobody' })],
      ['quantity out of range', json({ productId: 'lane-sold', userId: 'q', quantity: 0 })],
      [
        'a bad Idempotency-Key',
        json({ productId: 'lane-sold', userId: 'k' }),
        { 'idempotency-key': 'has spaces' },
      ],
      [
        'a forged ticket',
        json({ productId: 'lane-sold', userId: 't' }),
        { 'queue-ticket': 't1.lane-sold.t.1.forged' },
      ],
      [
        'a BOM before the JSON',
        Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), json({ productId: 'lane-later', userId: 'b' })]),
      ],
    ];
    for (const [what, body, headers] of cases) {
      const [lane, chunked] = [
        await post(svc.url, body, false, headers),
        await post(svc.url, body, true, headers),
      ];
      assert.ok(lane.status >= 400 && lane.status < 500, `${what}: ${lane.status} ${lane.body}`);
      assert.deepEqual([lane.status, lane.body], [chunked.status, chunked.body], what);
      for (const name of ['content-type', 'retry-after', 'queue-ticket']) {
        assert.equal(lane.headers[name], chunked.headers[name], `${what}: ${name}`);
      }
      assert.ok(lane.headers['x-request-id'], `${what}: X-Request-Id`);
    }
  });

  it('an order read plain answers as one read chunked', async () => {
    await createSale(svc.url, 'lane-ok', { stock: 4, shards: 2 });
    const lane = await post(svc.url, json({ productId: 'lane-ok', userId: 'a' }), false, {
      'idempotency-key': 'lk-1',
    });
    const chunked = await post(svc.url, json({ productId: 'lane-ok', userId: 'b' }), true);
    assert.deepEqual([lane.status, chunked.status], [202, 202], `${lane.body} ${chunked.body}`);
    const [a, b] = [JSON.parse(lane.body), JSON.parse(chunked.body)];
    assert.deepEqual(Object.keys(a).sort(), Object.keys(b).sort());
    // The key went along: the same request again answers the same order.
    const again = await post(svc.url, json({ productId: 'lane-ok', userId: 'a' }), false, {
      'idempotency-key': 'lk-1',
    });
    assert.equal(JSON.parse(again.body).orderId, a.orderId);
  });

  it('counts every answer once, by its outcome', async () => {
    await createSale(svc.url, 'door-count', { stock: 2, shards: 1 });
    const before = ordersCounted(await scrape(svc.url));
    const sent = [
      json({ productId: 'door-count', userId: 'a' }),
      json({ productId: 'door-count', userId: 'b' }),
      json({ productId: 'door-count', userId: 'c' }),
      json({ productId: 'no-such-product', userId: 'd' }),
      Buffer.from('{oops'),
    ];
    const statuses = [];
    for (const [i, body] of sent.entries()) statuses.push((await post(svc.url, body, i % 2 === 1)).status);
    assert.deepEqual(statuses, [202, 202, 409, 404, 400]);
    const after = ordersCounted(await scrape(svc.url));
    const delta = (outcome: string) => (after.get(outcome) ?? 0) - (before.get(outcome) ?? 0);
    assert.deepEqual(
      ['accepted', 'sold_out', 'unknown_product', 'invalid'].map(delta),
      [2, 1, 1, 1],
      'each answer counted once, under its outcome',
    );
    assert.equal(
      [...after.values()].reduce((a, b) => a + b, 0) - [...before.values()].reduce((a, b) => a + b, 0),
      5,
    );
  });

  it('refuses a body over the limit from its Content-Length, before it is sent, and closes the connection', async () => {
    const { port, hostname } = new URL(svc.url);
    const socket = connect(Number(port), hostname);
    socket.write(
      'POST /api/orders HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100000000000\r\n\r\n{',
    );
    let text = '';
    socket.on('data', (c: Buffer) => {
      text += c.toString();
    });
    // The server ends the connection itself: the test sends nothing more.
    await new Promise((resolve) => socket.once('close', resolve));
    assert.match(text, /^HTTP\/1\.1 413 /);
    assert.match(text, /"error":"payload_too_large"/);
    assert.match(text, /connection: close/i);
  });

  it('owns every spelling express would route to POST /api/orders', async () => {
    await createSale(svc.url, 'door-spelling', { stock: 5, shards: 1 });
    for (const path of ['/api/orders/', '/API/Orders', '/api/orders?x=1']) {
      const res = await fetch(`${svc.url}${path}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ productId: 'door-spelling', userId: `u${path.length}` }),
      });
      assert.equal(res.status, 202, `${path}: ${await res.text()}`);
    }
  });
});

/** flashsale_orders_total by outcome. */
function ordersCounted(samples: Map<string, number>): Map<string, number> {
  const counted = new Map<string, number>();
  for (const [key, v] of samples) {
    const m = /^flashsale_orders_total\{outcome="([a-z_]+)"\}$/.exec(key);
    if (m) counted.set(m[1] as string, v);
  }
  return counted;
}
