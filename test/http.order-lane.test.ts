// The order lane (src/http/order-lane.ts) answers POST /api/orders before express: every answer it
// gives must be the one express gives to the same request. Each request is sent twice, once as the
// lane reads it (plain JSON of a known length) and once chunked (which the lane leaves to express),
// and the two answers are compared whole. And the lane is the one answering: a plain request never
// reaches the app behind it, refused or placed, and a chunked one always does.
import assert from 'node:assert/strict';
import { createServer, request } from 'node:http';
import type { AddressInfo } from 'node:net';
import { describe, it } from 'node:test';
import express from 'express';
import { createSale } from '../harness/service.ts';
import type { BuyerIdentity } from '../src/http/buyer-identity.ts';
import type { OrderGate } from '../src/http/order-gate.ts';
import { OrderIntake } from '../src/http/order-intake.ts';
import { withOrderLane } from '../src/http/order-lane.ts';
import { SoldOutError } from '../src/inventory/errors.ts';
import { createLogger } from '../src/log.ts';
import type { PlaceOrder } from '../src/orders/place-order.ts';
import { useService } from './support/suite.ts';

interface Raw {
  status: number;
  body: string;
  headers: Record<string, string | string[] | undefined>;
}

/** One POST /api/orders: with Content-Length (the lane's), or chunked (express's). */
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

describe('the order lane answers as express does', () => {
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
      const [lane, express] = [
        await post(svc.url, body, false, headers),
        await post(svc.url, body, true, headers),
      ];
      assert.ok(lane.status >= 400 && lane.status < 500, `${what}: ${lane.status} ${lane.body}`);
      assert.deepEqual([lane.status, lane.body], [express.status, express.body], what);
      for (const name of ['content-type', 'retry-after', 'queue-ticket']) {
        assert.equal(lane.headers[name], express.headers[name], `${what}: ${name}`);
      }
      assert.ok(lane.headers['x-request-id'], `${what}: X-Request-Id`);
    }
  });

  it('an order the lane places answers as one placed through express', async () => {
    await createSale(svc.url, 'lane-ok', { stock: 4, shards: 2 });
    const lane = await post(svc.url, json({ productId: 'lane-ok', userId: 'a' }), false, {
      'idempotency-key': 'lk-1',
    });
    const express = await post(svc.url, json({ productId: 'lane-ok', userId: 'b' }), true);
    assert.deepEqual([lane.status, express.status], [202, 202], `${lane.body} ${express.body}`);
    const [a, b] = [JSON.parse(lane.body), JSON.parse(express.body)];
    assert.deepEqual(Object.keys(a).sort(), Object.keys(b).sort());
    // The key went along: the same request again answers the same order.
    const again = await post(svc.url, json({ productId: 'lane-ok', userId: 'a' }), false, {
      'idempotency-key': 'lk-1',
    });
    assert.equal(JSON.parse(again.body).orderId, a.orderId);
  });
});

describe('the order lane answers before express', () => {
  it('a plain order never reaches the app, refused or placed; a chunked one always does', async () => {
    const reached: string[] = [];
    const app = express();
    app.use((req, res) => {
      reached.push(String(req.headers['transfer-encoding'] ?? 'plain'));
      res.status(418).end();
    });
    // The real intake before stand-ins of the gate and the use case: product "p" is sold out at the
    // gate; any other is placed.
    const gate = {
      enter: async (order: { productId: string }) => {
        if (order.productId === 'p') throw new SoldOutError('p');
        return { release: () => {} };
      },
    } as unknown as OrderGate;
    const orders = {
      refusalFromMemory: () => undefined,
      place: async (order: { productId: string }) => ({
        ...order,
        orderId: `${order.productId}.0.0.t`,
        replayed: false,
      }),
    } as unknown as PlaceOrder;
    const intake = new OrderIntake({ gate, orders, maxOrderQuantity: 10 });
    const identity = { bind: async () => {} } as unknown as BuyerIdentity;
    const counted: string[] = [];
    const listener = withOrderLane(app, {
      intake,
      identity,
      onAnswer: (outcome) => counted.push(outcome),
      logger: createLogger('silent'),
    });
    const server = createServer(listener).listen(0, '127.0.0.1');
    await new Promise((r) => server.once('listening', r));
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    try {
      const plain = await post(url, json({ productId: 'p', userId: 'u' }), false);
      assert.equal(plain.status, 409);
      assert.equal(JSON.parse(plain.body).error, 'sold_out');
      const placed = await post(url, json({ productId: 'q', userId: 'u' }), false);
      assert.equal(placed.status, 202);
      assert.equal(JSON.parse(placed.body).orderId, 'q.0.0.t');
      assert.ok(placed.headers['x-request-id']);
      const chunked = await post(url, json({ productId: 'p', userId: 'u' }), true);
      assert.equal(chunked.status, 418);
      assert.deepEqual(reached, ['chunked']);
      assert.deepEqual(counted, ['sold_out', 'accepted']);
    } finally {
      server.close();
    }
  });
});
