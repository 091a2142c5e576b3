// The OpenAPI document against the service: every route and every status it can be driven to here is
// asked for, and each answer validates against the document for its route and status (call() checks
// it: harness/openapi-contract.ts); answers the document does not describe are refused by the check.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { checkAnswer, checkedRoutes, contractTally } from '../harness/openapi-contract.ts';
import { ADMIN_TOKEN, admin, call, createSale, type Reply } from '../harness/service.ts';
import type { ErrorCode } from '../src/errors.ts';
import { ERROR_STATUS } from '../src/http/errors.ts';
import { openApiDocument } from '../src/http/openapi/document.ts';
import { useService } from './support/suite.ts';

const { svc } = useService();
const api = (method: string, path: string, body?: unknown, headers: Record<string, string> = {}) =>
  call(svc.url, method, path, body, headers);
const order = (body: object, headers: Record<string, string> = {}) =>
  api('POST', '/api/orders', body, headers);
const expect = async (answer: Promise<Reply>, status: number, error?: string) => {
  const r = await answer;
  assert.deepEqual([r.status, r.body.error], [status, error], JSON.stringify(r.body));
  return r;
};

type Operations = Record<
  string,
  Record<string, { responses: Record<string, { content?: Record<string, { schema: object }> }> }>
>;
const paths = openApiDocument().paths as unknown as Operations;

describe('the OpenAPI document', () => {
  it('lists, under each status, only codes the status table maps to it; every code is in ErrorCode', () => {
    const schemas = openApiDocument().components?.schemas as Record<
      string,
      { properties?: { error?: { const?: string } } }
    >;
    const refs = (s: unknown): string[] =>
      JSON.stringify(s).match(/#\/components\/schemas\/\w+Error\b/g) ?? [];
    for (const [route, ops] of Object.entries(paths)) {
      for (const [method, op] of Object.entries(ops)) {
        for (const [status, response] of Object.entries(op.responses)) {
          for (const ref of refs(response)) {
            const code = schemas[ref.split('/').pop() as string]?.properties?.error?.const as ErrorCode;
            assert.equal(String(ERROR_STATUS[code]), status, `${method} ${route}: ${code} under ${status}`);
          }
        }
      }
    }
    const codes = (schemas.ErrorCode as unknown as { enum: string[] }).enum;
    assert.deepEqual(codes, [...Object.keys(ERROR_STATUS), 'internal']);
  });

  it('the check refuses answers the document does not describe', () => {
    const json = (status: number, body: object, extra: Record<string, string> = {}) => ({
      status,
      headers: new Headers({ 'content-type': 'application/json; charset=utf-8', ...extra }),
      text: JSON.stringify(body),
    });
    const wrong: Array<[string, string, ReturnType<typeof json>, RegExp]> = [
      [
        'POST',
        '/api/orders',
        json(202, { status: 'reserved', productId: 'p', userId: 'u', quantity: 1 }),
        /orderId/,
      ],
      ['POST', '/api/orders', json(409, { error: 'busy', message: 'm' }), /does not match/],
      ['POST', '/api/orders', json(418, { error: 'teapot', message: 'm' }), /does not list/],
      ['POST', '/api/orders', json(429, { error: 'busy', message: 'm' }), /Retry-After/],
      [
        'POST',
        '/api/orders',
        json(409, { error: 'sold_out', message: 'm', productId: 'p', available: 3 }),
        /does not match/,
      ],
      [
        'GET',
        '/api/products/p',
        json(200, { productId: 'p', available: '3', soldOut: false }),
        /does not match/,
      ],
    ];
    for (const [method, path, answer, message] of wrong) {
      assert.throws(() => checkAnswer(method, path, answer), message, `${method} ${path} ${answer.text}`);
    }
  });
});

describe('every route, every status it can be driven to here, validated against the document', () => {
  it('ops and documentation: health, readiness, metrics, the dashboard, the document, its reference page', async () => {
    for (const path of ['/healthz', '/readyz', '/metrics', '/dashboard'])
      assert.equal((await api('GET', path)).status, 200, path);
    const served = await api('GET', '/openapi.json');
    assert.deepEqual(served.body, JSON.parse(JSON.stringify(openApiDocument())));
    const page = await api('GET', '/docs/api');
    assert.equal(page.status, 200);
    assert.match(
      page.headers.get('content-security-policy') ?? '',
      /^default-src 'self'; style-src 'self' 'nonce-[^']+'/,
    );
    await expect(api('DELETE', '/openapi.json'), 405, 'method_not_allowed');
    await expect(api('GET', '/no/such/path'), 404, 'not_found');
  });

  it('admin: put, restock, reshard, status, reconcile, live, and their refusals', async () => {
    await expect(api('PUT', '/admin/products/c-admin', { stock: 10, shards: 2 }, admin), 201);
    await expect(
      api('PUT', '/admin/products/c-admin', { stock: 10, shards: 2, perUserLimit: 3 }, admin),
      200,
    );
    await expect(api('PUT', '/admin/products/c-admin', { stock: 10 }, admin), 400, 'invalid_request');
    await expect(api('PUT', '/admin/products/c-admin', { stock: 10, shards: 2 }), 401, 'unauthorized');
    await expect(
      api('GET', '/admin/products/c-admin', undefined, { authorization: `Bearer ${ADMIN_TOKEN}x` }),
      401,
      'unauthorized',
    );
    await expect(api('POST', '/admin/products/c-admin/restock', { delta: 5 }, admin), 200);
    await expect(
      api('POST', '/admin/products/c-admin/restock', { delta: -100 }, admin),
      409,
      'insufficient_stock',
    );
    await expect(
      api('POST', '/admin/products/c-admin/restock', { delta: 1_000_000_000 }, admin),
      409,
      'stock_limit_exceeded',
    );
    await expect(api('POST', '/admin/products/c-none/restock', { delta: 1 }, admin), 404, 'unknown_product');
    await expect(api('POST', '/admin/products/c-admin/reshard', { shards: 3 }, admin), 200);
    await expect(api('GET', '/admin/products/c-admin', undefined, admin), 200);
    await expect(api('GET', '/admin/products/c-none', undefined, admin), 404, 'unknown_product');
    await expect(api('GET', '/admin/products/c-admin/reconcile', undefined, admin), 200);
    await expect(api('GET', '/admin/products/c-admin/live', undefined, admin), 200);
    await expect(
      api('GET', '/admin/products/c-admin/live?since=soon', undefined, admin),
      400,
      'invalid_request',
    );
    await expect(api('DELETE', '/admin/products/c-admin', undefined, admin), 405, 'method_not_allowed');
  });

  it('the product view and POST /api/orders: the order, a replay, and every refusal a test can cause', async () => {
    await createSale(svc.url, 'c-buy', { stock: 3, shards: 1, perUserLimit: 2 });
    await expect(api('GET', '/api/products/c-buy'), 200);
    await expect(api('GET', '/api/products/c-nothing'), 404, 'unknown_product');
    await expect(api('GET', '/api/products/bad%20id'), 400, 'invalid_request');
    const key = { 'idempotency-key': 'c-key-1' };
    await expect(order({ productId: 'c-buy', userId: 'ann' }, key), 202);
    await expect(order({ productId: 'c-buy', userId: 'ann' }, key), 202);
    await expect(
      order({ productId: 'c-buy', userId: 'ann', quantity: 2 }, key),
      422,
      'idempotency_key_reused',
    );
    await expect(order({ productId: 'c-buy', userId: 'ann', quantity: 2 }), 409, 'limit_exceeded');
    await expect(order({ productId: 'c-buy', userId: 'bob', quantity: 2 }), 202);
    await expect(order({ productId: 'c-buy', userId: 'cat', quantity: 2 }), 409, 'sold_out');
    await createSale(svc.url, 'c-few', { stock: 1, shards: 1 });
    await expect(order({ productId: 'c-few', userId: 'dan', quantity: 2 }), 409, 'insufficient_stock');
    await expect(order({ productId: 'c-nothing', userId: 'dan' }), 404, 'unknown_product');
    await expect(order({ productId: 'c-buy', userId: 'dan', quantity: '1' }), 400, 'invalid_request');
    await expect(order({ productId: 'c-buy', userId: 'x'.repeat(20_000) }), 413, 'payload_too_large');
    await expect(
      order({}, { 'content-type': 'application/json; charset=koi8-r' }),
      415,
      'unsupported_media_type',
    );
    await createSale(svc.url, 'c-later', { stock: 1, shards: 1, startsAt: '2100-01-01T00:00:00Z' });
    await expect(order({ productId: 'c-later', userId: 'dan' }), 409, 'not_started');
    const past = { startsAt: '2020-01-01T00:00:00Z', endsAt: '2020-01-02T00:00:00Z' };
    await createSale(svc.url, 'c-over', { stock: 1, shards: 1, ...past });
    await expect(order({ productId: 'c-over', userId: 'dan' }), 409, 'sale_ended');
    await expect(api('GET', '/api/orders'), 405, 'method_not_allowed');
  });

  it('the waiting room: 429 queued with its ticket, and 400 invalid_ticket', async () => {
    await createSale(svc.url, 'c-draw', { stock: 2, shards: 1, queue: { lotterySeconds: 600 } });
    const queued = await expect(order({ productId: 'c-draw', userId: 'eve' }), 429, 'queued');
    assert.equal(queued.headers.get('queue-ticket'), queued.body.ticket);
    await expect(
      order({ productId: 'c-draw', userId: 'eve' }, { 'queue-ticket': 'garbage' }),
      400,
      'invalid_ticket',
    );
    await expect(
      order({ productId: 'c-draw', userId: 'eve' }, { 'queue-ticket': String(queued.body.ticket) }),
      429,
      'queued',
    );
  });

  it('an order read, paid and cancelled, and the refusals of each', async () => {
    await createSale(svc.url, 'c-pay', { stock: 5, shards: 1, paymentTimeoutSec: 600 });
    const placed = async (userId: string) =>
      String((await expect(order({ productId: 'c-pay', userId }), 202)).body.orderId);
    const [paid, cancelled] = [await placed('fay'), await placed('gus')];
    await expect(api('GET', `/api/orders/${paid}`), 200);
    await expect(api('GET', `/api/orders/${paid}`, undefined, admin), 200);
    await expect(api('GET', '/api/orders/no-such-order'), 404, 'unknown_order');
    await expect(api('POST', `/api/orders/${paid}/pay`, { userId: 'gus' }), 404, 'unknown_order');
    await expect(api('POST', `/api/orders/${paid}/pay`, { userId: 'fay' }), 200);
    await expect(api('POST', `/api/orders/${paid}/pay`, { userId: 'fay' }), 200);
    await expect(api('POST', `/api/orders/${paid}/cancel`, { userId: 'fay' }), 409, 'already_paid');
    await expect(api('POST', `/api/orders/${cancelled}/cancel`, { userId: 'gus' }), 200);
    await expect(api('POST', `/api/orders/${cancelled}/pay`, { userId: 'gus' }), 409, 'order_cancelled');
    await expect(api('POST', '/api/orders/no-such-order/pay', { userId: 'gus' }), 404, 'unknown_order');
    await expect(api('POST', '/api/orders/no-such-order/cancel', { userId: 'gus' }), 404, 'unknown_order');
    await expect(api('POST', `/api/orders/${paid}/cancel`, { user: 'fay' }), 400, 'invalid_request');
  });

  it('reached every operation of the document', () => {
    const operations = Object.entries(paths).flatMap(([route, ops]) =>
      Object.keys(ops).map((m) => `${m.toUpperCase()} ${route}`),
    );
    assert.deepEqual(
      operations.filter((o) => !checkedRoutes().has(o)),
      [],
    );
    const t = contractTally();
    console.log(
      `OpenAPI contract (this file): ${t.answers} answers, ${t.routes} routes, ${t.statuses} route-status pairs`,
    );
  });
});
