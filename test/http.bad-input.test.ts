// DESIGN.md §5.6: bad input gets a clear 4xx ({error, message}) and changes nothing. Every endpoint
// is fed malformed JSON, wrong types, out-of-range numbers, odd ids, unknown products/orders, missing
// or wrong admin tokens, oversized and non-JSON bodies; after each group the whole private Redis
// and the orders / admin_audit row counts are compared with a snapshot taken before.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ADMIN_TOKEN, admin, call, type Reply } from '../harness/service.ts';
import { MAX_ORDER_QUANTITY, useBadInput } from './support/bad-input.ts';

const { api, existingOrderId, assertUnchanged, assertRefused, raw } = useBadInput();

const BODY_ENDPOINTS: Array<{ method: string; path: string; headers: Record<string, string> }> = [
  { method: 'POST', path: '/api/orders', headers: {} },
  { method: 'PUT', path: '/admin/products/live', headers: admin },
  { method: 'POST', path: '/admin/products/live/restock', headers: admin },
  { method: 'POST', path: '/admin/products/live/reshard', headers: admin },
];

describe('malformed and wrong-typed bodies', () => {
  it('malformed JSON on every endpoint that takes a body: 400 invalid_request', async () => {
    const bodies = [
      '{',
      '{"productId": "live",',
      'nul',
      '[1,2',
      '{"a":1}}',
      "{'productId':'live'}",
      '{"stock":08}',
    ];
    for (const ep of BODY_ENDPOINTS) {
      for (const body of bodies) {
        const r = await call(api.url, ep.method, ep.path, body, ep.headers);
        assertRefused(r, 400, 'invalid_request', `${ep.method} ${ep.path} ${body}`);
      }
    }
    await assertUnchanged('malformed JSON');
  });

  it('JSON that is not an object: 400 invalid_request', async () => {
    for (const ep of BODY_ENDPOINTS) {
      for (const body of ['"live"', '123', 'null', 'true', '[]', '[{"productId":"live","userId":"u"}]']) {
        const r = await call(api.url, ep.method, ep.path, body, ep.headers);
        assertRefused(r, 400, 'invalid_request', `${ep.method} ${ep.path} ${body}`);
      }
      const empty = await call(api.url, ep.method, ep.path, '', ep.headers);
      assertRefused(empty, 400, 'invalid_request', `${ep.method} ${ep.path} (empty body)`);
    }
    await assertUnchanged('non-object JSON');
  });

  it('POST /api/orders with wrong types or out-of-range quantity: 400 invalid_request', async () => {
    const cases: unknown[] = [
      { productId: 'live', userId: 'u1', quantity: '2' },
      { productId: 123, userId: 'u1' },
      { productId: 'live', userId: 5 },
      { productId: null, userId: 'u1' },
      { productId: 'live', userId: null },
      { productId: 'live', userId: 'u1', quantity: null },
      { productId: 'live', userId: 'u1', quantity: true },
      { productId: 'live', userId: 'u1', quantity: [1] },
      { productId: 'live', userId: 'u1', quantity: { n: 1 } },
      { productId: ['live'], userId: 'u1' },
      { productId: { id: 'live' }, userId: 'u1' },
      { userId: 'u1' },
      { productId: 'live' },
      {},
      ...[0, -1, -0, 1e30, 2.5, 0.5, MAX_ORDER_QUANTITY + 1, 2 ** 31, Number.MAX_SAFE_INTEGER + 2].map(
        (quantity) => ({
          productId: 'live',
          userId: 'u1',
          quantity,
        }),
      ),
      // Also for a product with a per-user limit (a claim must not be taken) and a sold-out one.
      { productId: 'limited', userId: 'bob', quantity: 0 },
      { productId: 'limited', userId: 'new-user', quantity: 2.5 },
      { productId: 'gone', userId: 'u1', quantity: -1 },
    ];
    for (const body of cases) {
      const r = await call(api.url, 'POST', '/api/orders', body);
      assertRefused(r, 400, 'invalid_request', JSON.stringify(body));
    }
    // Numbers spelled in ways JSON.stringify would not produce.
    for (const text of [
      '{"productId":"live","userId":"u1","quantity":1e30}',
      '{"productId":"live","userId":"u1","quantity":1.5e0}',
      '{"productId":"live","userId":"u1","quantity":-0}',
      '{"productId":"live","userId":"u1","quantity":1e400}',
      '{"productId":"live","userId":"u1","quantity":0x10}',
      '{"productId":"live","userId":"u1","quantity":NaN}',
    ]) {
      assertRefused(await call(api.url, 'POST', '/api/orders', text), 400, 'invalid_request', text);
    }
    await assertUnchanged('orders with wrong types');
  });

  it('the 400 names the offending field', async () => {
    for (const [body, field] of [
      [{ productId: 'live', userId: 'u1', quantity: '2' }, 'quantity'],
      [{ productId: 123, userId: 'u1' }, 'productId'],
      [{ productId: 'live', userId: 'a b' }, 'userId'],
    ] as const) {
      const r = await call(api.url, 'POST', '/api/orders', body);
      assert.equal(r.status, 400);
      assert.match(r.body.message as string, new RegExp(field), JSON.stringify(r.body));
    }
    const put = await call(api.url, 'PUT', '/admin/products/live', { stock: '8', shards: 2 }, admin);
    assert.match(put.body.message as string, /stock/);
    await assertUnchanged('field names');
  });

  it('PUT /admin/products/:id with wrong types or ranges: 400 invalid_request, sale untouched', async () => {
    const cases: unknown[] = [
      { stock: '8', shards: 2 },
      { stock: 8, shards: 2.5 },
      { stock: 8, shards: '2' },
      { stock: -1, shards: 2 },
      { stock: 1e30, shards: 2 },
      { stock: 2.5, shards: 2 },
      { stock: null, shards: 2 },
      { stock: 8, shards: 0 },
      { stock: 8, shards: 1025 },
      { stock: 8, shards: -1 },
      { stock: 8, shards: 2, perUserLimit: '2' },
      { stock: 8, shards: 2, perUserLimit: -1 },
      { stock: 8, shards: 2, perUserLimit: 2.5 },
      { stock: 8 },
      { shards: 2 },
      {},
    ];
    for (const pid of ['live', 'brand-new']) {
      for (const body of cases) {
        const r = await call(api.url, 'PUT', `/admin/products/${pid}`, body, admin);
        assertRefused(r, 400, 'invalid_request', `${pid} ${JSON.stringify(body)}`);
      }
    }
    await assertUnchanged('bad PUT');
  });

  it('restock with a non-integer delta, reshard with counts 0, 1025, 2.5, "8": 400 invalid_request', async () => {
    for (const delta of ['5', 2.5, 1e30, -1e30, null, true, [1]]) {
      const r = await call(api.url, 'POST', '/admin/products/live/restock', { delta }, admin);
      assertRefused(r, 400, 'invalid_request', `restock ${JSON.stringify(delta)}`);
    }
    assertRefused(
      await call(api.url, 'POST', '/admin/products/live/restock', {}, admin),
      400,
      'invalid_request',
      'restock {}',
    );
    for (const shards of [0, 1025, 2.5, '8', -1, null, 1e30]) {
      const r = await call(api.url, 'POST', '/admin/products/live/reshard', { shards }, admin);
      assertRefused(r, 400, 'invalid_request', `reshard ${JSON.stringify(shards)}`);
    }
    assertRefused(
      await call(api.url, 'POST', '/admin/products/live/reshard', {}, admin),
      400,
      'invalid_request',
      'reshard {}',
    );
    await assertUnchanged('bad restock/reshard');
  });
});

describe('ids', () => {
  const BAD_PRODUCT_IDS = [
    'a'.repeat(65),
    'a b',
    'a{b}',
    'ü',
    'prod\u00e9',
    '../x',
    'a/b',
    'a.b',
    'a:b',
    '*',
    '%',
  ];
  const BAD_USER_IDS = ['a'.repeat(129), 'a b', 'a{b}', 'a}b', 'ü', '', '../x', 'a\nb', 'a\u0000b'];

  it('POST /api/orders with an odd productId or userId: 400 invalid_request', async () => {
    for (const productId of [...BAD_PRODUCT_IDS, '']) {
      const r = await call(api.url, 'POST', '/api/orders', { productId, userId: 'u1' });
      assertRefused(r, 400, 'invalid_request', `productId ${JSON.stringify(productId)}`);
    }
    for (const userId of BAD_USER_IDS) {
      for (const productId of ['live', 'limited']) {
        const r = await call(api.url, 'POST', '/api/orders', { productId, userId });
        assertRefused(r, 400, 'invalid_request', `userId ${JSON.stringify(userId)}`);
      }
    }
    // The longest legal ids are fine (not refused for length), on an unknown product: 404, not 400.
    const longest = await call(api.url, 'POST', '/api/orders', {
      productId: 'z'.repeat(64),
      userId: 'u'.repeat(128),
    });
    assertRefused(longest, 404, 'unknown_product', '64/128-char ids');
    await assertUnchanged('odd ids in order bodies');
  });

  it('odd product ids in paths: 400 invalid_request on every product endpoint', async () => {
    for (const id of BAD_PRODUCT_IDS) {
      const p = encodeURIComponent(id);
      const replies: Array<[string, Reply]> = [
        ['GET product', await call(api.url, 'GET', `/api/products/${p}`)],
        ['PUT', await call(api.url, 'PUT', `/admin/products/${p}`, { stock: 5, shards: 1 }, admin)],
        ['restock', await call(api.url, 'POST', `/admin/products/${p}/restock`, { delta: 1 }, admin)],
        ['reshard', await call(api.url, 'POST', `/admin/products/${p}/reshard`, { shards: 2 }, admin)],
        ['admin GET', await call(api.url, 'GET', `/admin/products/${p}`, undefined, admin)],
        ['reconcile', await call(api.url, 'GET', `/admin/products/${p}/reconcile`, undefined, admin)],
      ];
      for (const [what, r] of replies)
        assertRefused(r, 400, 'invalid_request', `${what} ${JSON.stringify(id)}`);
    }
    await assertUnchanged('odd ids in paths');
  });

  it('GET /api/orders/:id with an unknown or malformed id: 404 unknown_order', async () => {
    const [product, gen, index] = existingOrderId().split('.');
    const ids = [
      `${product}.${gen}.${index}.${'0'.repeat(24)}`, // well-formed, not there
      `${product}.999.${index}.${'a'.repeat(24)}`, // a generation that never existed
      `nope.1.0.${'b'.repeat(24)}`, // a product that never existed
      `${existingOrderId()}x`,
      existingOrderId().toUpperCase(),
      'x'.repeat(65),
      'a'.repeat(5000),
      'a b',
      'a{b}',
      'ü',
      '../x',
      '%',
    ];
    for (const id of ids) {
      const r = await call(api.url, 'GET', `/api/orders/${encodeURIComponent(id)}`);
      assertRefused(r, 404, 'unknown_order', JSON.stringify(id.slice(0, 80)));
    }
    // The real one still answers.
    const ok = await call(api.url, 'GET', `/api/orders/${existingOrderId()}`);
    assert.deepEqual([ok.status, ok.body.status], [200, 'reserved']);
    await assertUnchanged('unknown orders');
  });
});

describe('unknown products', () => {
  it('404 unknown_product on every endpoint of a product that has no sale (orders with and without key)', async () => {
    const replies: Array<[string, Reply]> = [
      ['order', await call(api.url, 'POST', '/api/orders', { productId: 'no-such', userId: 'u1' })],
      [
        'order with key',
        await call(
          api.url,
          'POST',
          '/api/orders',
          { productId: 'no-such', userId: 'u1' },
          { 'idempotency-key': 'k-404' },
        ),
      ],
      ['GET product', await call(api.url, 'GET', '/api/products/no-such')],
      ['admin GET', await call(api.url, 'GET', '/admin/products/no-such', undefined, admin)],
      ['reconcile', await call(api.url, 'GET', '/admin/products/no-such/reconcile', undefined, admin)],
    ];
    for (const [what, r] of replies) assertRefused(r, 404, 'unknown_product', what);
    await assertUnchanged('unknown product (orders, reads)');
  });

  it('404 unknown_product for restock and reshard of a product that has no sale, changing nothing', async () => {
    assertRefused(
      await call(api.url, 'POST', '/admin/products/no-such/restock', { delta: 5 }, admin),
      404,
      'unknown_product',
      'restock',
    );
    assertRefused(
      await call(api.url, 'POST', '/admin/products/no-such/reshard', { shards: 2 }, admin),
      404,
      'unknown_product',
      'reshard',
    );
    await assertUnchanged('unknown product (admin changes)');
  });
});

describe('admin authentication', () => {
  const ENDPOINTS: Array<[string, string, unknown]> = [
    ['PUT', '/admin/products/live', { stock: 1, shards: 1 }],
    ['PUT', '/admin/products/brand-new', { stock: 1, shards: 1 }],
    ['POST', '/admin/products/live/restock', { delta: 100 }],
    ['POST', '/admin/products/live/restock', { delta: -48 }],
    ['POST', '/admin/products/live/reshard', { shards: 8 }],
    ['GET', '/admin/products/live', undefined],
    ['GET', '/admin/products/live/reconcile', undefined],
    ['GET', '/admin/products/no-such', undefined],
  ];

  it('no token, not a Bearer token or a wrong token: the same 401 unauthorized', async () => {
    for (const [method, path, body] of ENDPOINTS) {
      const noToken: Record<string, string>[] = [
        {},
        { authorization: '' },
        { authorization: 'Bearer' },
        { authorization: 'Bearer ' },
        { authorization: `Basic ${Buffer.from(`admin:${ADMIN_TOKEN}`).toString('base64')}` },
        { authorization: ADMIN_TOKEN },
      ];
      for (const headers of noToken) {
        const r = await call(api.url, method, path, body, headers);
        assertRefused(r, 401, 'unauthorized', `${method} ${path} ${JSON.stringify(headers)}`);
      }
      for (const token of [
        `${ADMIN_TOKEN}x`,
        ADMIN_TOKEN.slice(0, -1),
        'dev-admin-token',
        ADMIN_TOKEN.toUpperCase(),
        'x',
      ]) {
        const r = await call(api.url, method, path, body, { authorization: `Bearer ${token}` });
        assertRefused(r, 401, 'unauthorized', `${method} ${path} token ${token}`);
      }
    }
    await assertUnchanged('unauthenticated admin requests');
  });
});

describe('refusals decided under the locks', () => {
  it('restock removing more than is available: 409 insufficient_stock, stock untouched', async () => {
    const status = await call(api.url, 'GET', '/admin/products/live', undefined, admin);
    const available = status.body.available as number;
    const r = await call(api.url, 'POST', '/admin/products/live/restock', { delta: -(available + 1) }, admin);
    assertRefused(r, 409, 'insufficient_stock', `restock -${available + 1}`);
    assert.equal(r.body.available, available);
    const huge = await call(
      api.url,
      'POST',
      '/admin/products/live/restock',
      { delta: -1_000_000_000 },
      admin,
    );
    assertRefused(huge, 409, 'insufficient_stock', 'restock -1e9');
    const gone = await call(api.url, 'POST', '/admin/products/gone/restock', { delta: -1 }, admin);
    assertRefused(gone, 409, 'insufficient_stock', 'restock -1 on a sold-out product');
    // The refusal is decided holding the shard locks (the stock cannot move meanwhile), so the locks'
    // own bookkeeping moves: fencing counters (and unlock latches, never part of a snapshot).
    await assertUnchanged('insufficient stock', { exclude: (k) => k.startsWith('flashsale_lock__token:') });
  });
});

describe('transport-level refusals', () => {
  it('body larger than the limit: 413 payload_too_large on every body endpoint', async () => {
    const big = JSON.stringify({ productId: 'live', userId: 'u1', padding: 'x'.repeat(20_000) });
    for (const ep of BODY_ENDPOINTS) {
      const r = await call(api.url, ep.method, ep.path, big, ep.headers);
      assertRefused(r, 413, 'payload_too_large', `${ep.method} ${ep.path}`);
    }
    const huge = 'x'.repeat(2_000_000);
    assertRefused(await call(api.url, 'POST', '/api/orders', huge), 413, 'payload_too_large', '2 MB');
    await assertUnchanged('too large');
  });

  it('a body that is not JSON (content type): 400 invalid_request, not parsed as an order', async () => {
    const valid = JSON.stringify({ productId: 'live', userId: 'u-ct', quantity: 1 });
    for (const [contentType, body] of [
      ['text/plain', valid],
      ['application/x-www-form-urlencoded', 'productId=live&userId=u-ct&quantity=1'],
      [
        'multipart/form-data; boundary=x',
        `--x\r\nContent-Disposition: form-data; name="productId"\r\n\r\nlive\r\n--x--`,
      ],
      ['application/xml', '<order productId="live" userId="u-ct"/>'],
      [undefined, valid],
    ] as const) {
      const headers: Record<string, string> = contentType ? { 'content-type': contentType } : {};
      const r = await raw('POST', '/api/orders', body, headers);
      assertRefused(r, 400, 'invalid_request', `content-type ${contentType}`);
      const a = await raw('PUT', '/admin/products/live', JSON.stringify({ stock: 1, shards: 1 }), {
        ...headers,
        ...admin,
      });
      assertRefused(a, 400, 'invalid_request', `admin PUT content-type ${contentType}`);
    }
    await assertUnchanged('non-JSON content type');
  });

  it('JSON in a charset other than UTF-8: 415 unsupported_media_type', async () => {
    const valid = JSON.stringify({ productId: 'live', userId: 'u-cs' });
    for (const charset of ['latin1', 'iso-8859-1', 'koi8-r', 'shift_jis']) {
      const r = await raw('POST', '/api/orders', valid, {
        'content-type': `application/json; charset=${charset}`,
      });
      assertRefused(r, 415, 'unsupported_media_type', charset);
    }
    // Other Unicode encodings too, their bytes as they say (the contract takes UTF-8 only), on every
    // route that reads a body.
    const routes: Array<[string, string, object]> = [
      ['POST', '/api/orders', { productId: 'live', userId: 'u-cs' }],
      ['POST', `/api/orders/${existingOrderId()}/cancel`, { userId: 'u-cs' }],
      ['PUT', '/admin/products/live', { stock: 1, shards: 1 }],
    ];
    for (const [method, path, body] of routes) {
      for (const charset of ['utf-16le', 'utf-16', 'UTF-16BE', 'utf-32']) {
        const bytes = new Uint8Array(Buffer.from(JSON.stringify(body), 'utf16le'));
        const r = await raw(method, path, bytes, {
          'content-type': `application/json; charset=${charset}`,
          ...(path.startsWith('/admin') ? admin : {}),
        });
        assertRefused(r, 415, 'unsupported_media_type', `${method} ${path} ${charset}`);
      }
    }
    await assertUnchanged('charset');
  });

  it('a valid order with a malformed Idempotency-Key: 400 invalid_request and no order placed', async () => {
    for (const key of ['', 'a b', 'a{b}', 'k'.repeat(201), 'ü', '../x', 'a/b']) {
      const r = await call(
        api.url,
        'POST',
        '/api/orders',
        { productId: 'live', userId: 'u-key' },
        {
          'idempotency-key': key,
        },
      );
      assertRefused(r, 400, 'invalid_request', `key ${JSON.stringify(key)}`);
    }
    await assertUnchanged('bad Idempotency-Key');
  });

  it('unknown paths: 404 not_found; a known path with another method: 405 with Allow', async () => {
    for (const [method, path, allow] of [
      ['GET', '/api/orders', 'POST'],
      ['PUT', '/api/orders', 'POST'],
      ['DELETE', '/api/orders/x', 'GET, HEAD'],
      ['GET', '/api/orders/x/pay', 'POST'],
      ['POST', '/api/products/live', 'GET, HEAD'],
      ['DELETE', '/admin/products/live', 'GET, PUT, HEAD'],
      ['PUT', '/admin/products/live/restock', 'POST'],
      ['POST', '/admin/products/live/reconcile', 'GET, HEAD'],
      ['POST', '/healthz', 'GET, HEAD'],
      ['DELETE', '/metrics', 'GET, HEAD'],
      ['GET', '/nope', undefined],
      ['POST', '/api/product/live', undefined],
    ] as const) {
      const headers = path.startsWith('/admin') ? admin : {};
      const r = await call(
        api.url,
        method,
        path,
        method === 'GET' ? undefined : { productId: 'live', userId: 'u' },
        headers,
      );
      if (allow === undefined) {
        assertRefused(r, 404, 'not_found', `${method} ${path}`);
      } else {
        assertRefused(r, 405, 'method_not_allowed', `${method} ${path}`);
        assert.equal(r.headers.get('allow'), allow, `${method} ${path}`);
      }
    }
    // The admin door comes first: without the token a wrong method is 401, not 405.
    assertRefused(await call(api.url, 'DELETE', '/admin/products/live'), 401, 'unauthorized', 'no token');
    await assertUnchanged('unknown routes');
  });
});
