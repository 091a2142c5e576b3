// The admin trail and the admin door: every admin change writes exactly one audit row (who, when,
// what, before, after); reads write none; a refused change — bad token, bad input, unknown product,
// not enough stock — writes none and changes nothing.
import assert from 'node:assert/strict';
import { before, describe, it } from 'node:test';
import { ADMIN_TOKEN, admin, call, createSale, drained, spawnService } from '../harness/service.ts';
import { useService } from './support/suite.ts';

const { infra, svc } = useService();

interface AuditRow {
  id: string;
  at: Date;
  actor: string;
  action: string;
  product_id: string | null;
  before: Record<string, number> | null;
  after: Record<string, number> | null;
  request: Record<string, unknown> | null;
}

async function auditRows(productId?: string): Promise<AuditRow[]> {
  const r = productId
    ? await infra.pool.query('select * from admin_audit where product_id = $1 order by id', [productId])
    : await infra.pool.query('select * from admin_audit order by id');
  return r.rows as AuditRow[];
}

const as = (actor: string) => ({ ...admin, 'x-admin-actor': actor });

describe('audit trail', () => {
  it('put, replace, restock and reshard each write one row: actor, action, before, after, request', async () => {
    const P = 'audited';
    const t0 = Date.now();
    const created = await call(
      svc.url,
      'PUT',
      `/admin/products/${P}`,
      { stock: 100, shards: 4 },
      as('alice'),
    );
    assert.equal(created.status, 201);
    let rows = await auditRows(P);
    assert.equal(rows.length, 1);
    const [first] = rows as [AuditRow];
    // The authenticated actor (the token's holder at an address); the header only as a label.
    assert.equal(first.actor, 'admin-token@127.0.0.1 label:alice');
    assert.equal(first.action, 'put');
    assert.equal(first.product_id, P);
    assert.equal(first.before, null, 'nothing existed before');
    assert.deepEqual(first.after, {
      available: 100,
      sold: 0,
      reserved: 0,
      confirmed: 0,
      total: 100,
      generation: 1,
      shards: 4,
    });
    assert.deepEqual(first.request, { stock: 100, shards: 4 });
    assert.ok(first.at.getTime() >= t0 - 1000 && first.at.getTime() <= Date.now() + 1000, 'at is now');

    // Sell 3 units so before/after carry sales too.
    for (const u of ['a', 'b', 'c']) {
      assert.equal((await call(svc.url, 'POST', '/api/orders', { productId: P, userId: u })).status, 202);
    }
    await drained(svc.url, P);

    const steps: Array<{ method: string; path: string; body: object; action: string }> = [
      { method: 'POST', path: `/admin/products/${P}/restock`, body: { delta: 10 }, action: 'restock' },
      { method: 'POST', path: `/admin/products/${P}/restock`, body: { delta: -7 }, action: 'restock' },
      { method: 'POST', path: `/admin/products/${P}/reshard`, body: { shards: 7 }, action: 'reshard' },
      {
        method: 'PUT',
        path: `/admin/products/${P}`,
        body: { stock: 50, shards: 2, perUserLimit: 1 },
        action: 'put',
      },
    ];
    for (const [i, step] of steps.entries()) {
      const r = await call(svc.url, step.method, step.path, step.body, as(`bob-${i}`));
      assert.equal(r.status, 200, JSON.stringify(r.body));
      rows = await auditRows(P);
      assert.equal(rows.length, 2 + i, 'exactly one row per change');
      const row = rows.at(-1) as AuditRow;
      assert.equal(row.actor, `admin-token@127.0.0.1 label:bob-${i}`);
      assert.equal(row.action, step.action);
      assert.deepEqual(row.request, step.body);
      assert.ok(row.before && row.after);
      // (Orders changed the sale between the first row and the second; no order ran since.)
      if (i > 0)
        assert.deepEqual(row.before, rows.at(-2)?.after, 'each change starts where the previous one ended');
      assert.equal(row.after.generation, Number(row.before.generation) + 1);
    }
    const [restockUp, restockDown, resharded, replaced] = rows.slice(1) as AuditRow[];
    assert.deepEqual(
      [restockUp?.before?.available, restockUp?.after?.available, restockUp?.after?.total],
      [97, 107, 110],
    );
    assert.deepEqual(
      [restockDown?.after?.available, restockDown?.after?.total, restockDown?.after?.sold],
      [100, 103, 3],
    );
    assert.deepEqual([resharded?.before?.shards, resharded?.after?.shards], [4, 7]);
    assert.equal(resharded?.after?.available, 100);
    // A replaced sale keeps what was sold: total = sold + the new stock.
    assert.deepEqual(
      [replaced?.after?.available, replaced?.after?.sold, replaced?.after?.total],
      [50, 3, 53],
    );
  });

  it('without an actor header the caller address is recorded', async () => {
    const P = 'anonymous';
    await createSale(svc.url, P, { stock: 1, shards: 1 });
    const [row] = await auditRows(P);
    assert.match(String(row?.actor), /127\.0\.0\.1/);
  });

  it('reads (status, reconcile) write no row', async () => {
    const P = 'read-only';
    await createSale(svc.url, P, { stock: 5, shards: 1 });
    const n = (await auditRows()).length;
    assert.equal((await call(svc.url, 'GET', `/admin/products/${P}`, undefined, admin)).status, 200);
    assert.equal(
      (await call(svc.url, 'GET', `/admin/products/${P}/reconcile`, undefined, admin)).status,
      200,
    );
    assert.equal((await auditRows()).length, n);
  });
});

describe('admin authentication and refused changes', () => {
  const P = 'guarded';
  const routes = [
    { method: 'PUT', path: `/admin/products/${P}`, body: { stock: 9, shards: 3 } },
    { method: 'POST', path: `/admin/products/${P}/restock`, body: { delta: 5 } },
    { method: 'POST', path: `/admin/products/${P}/reshard`, body: { shards: 2 } },
    { method: 'GET', path: `/admin/products/${P}` },
    { method: 'GET', path: `/admin/products/${P}/reconcile` },
  ];

  before(async () => {
    await createSale(svc.url, P, { stock: 10, shards: 2 });
  });

  const state = async () => ({
    sale: await infra.client.hgetall(`sale:{${P}}`),
    shards: await infra.client.lrange(`sale:{${P}}:shards`, 0, -1),
    rows: (await auditRows()).length,
  });

  it('401 without a bearer token, 403 with a wrong one; nothing changes, nothing is audited', async () => {
    const before = await state();
    const wrong = ['x', `${ADMIN_TOKEN}x`, ADMIN_TOKEN.replace(/.$/, '?'), ADMIN_TOKEN.toUpperCase()];
    for (const route of routes) {
      for (const headers of [
        {} as Record<string, string>,
        { authorization: '' },
        { authorization: `Basic ${ADMIN_TOKEN}` },
        { authorization: 'Bearer' },
        { authorization: 'Bearer   ' },
      ]) {
        const r = await call(svc.url, route.method, route.path, route.body, headers);
        assert.equal(r.status, 401, `${route.method} ${route.path} ${JSON.stringify(headers)}`);
        assert.equal(r.body.error, 'unauthorized');
      }
      for (const token of wrong) {
        const r = await call(svc.url, route.method, route.path, route.body, {
          authorization: `Bearer ${token}`,
        });
        assert.equal(r.status, 401, `${route.method} ${route.path} with ${token}`);
        assert.equal(r.body.error, 'unauthorized');
        assert.doesNotMatch(
          JSON.stringify(r.body),
          new RegExp(ADMIN_TOKEN),
          'the answer never echoes the token',
        );
      }
    }
    // The scheme is case-insensitive, as HTTP says.
    assert.equal(
      (
        await call(svc.url, 'GET', `/admin/products/${P}`, undefined, {
          authorization: `bearer ${ADMIN_TOKEN}`,
        })
      ).status,
      200,
    );
    assert.deepEqual(await state(), before);
  });

  it('bad input, unknown product and insufficient stock are refused with no row and no change', async () => {
    const before = await state();
    const refused: Array<[string, string, unknown, number, string]> = [
      ['PUT', `/admin/products/${P}`, { stock: -1, shards: 2 }, 400, 'invalid_request'],
      ['PUT', `/admin/products/${P}`, { stock: 10, shards: 0 }, 400, 'invalid_request'],
      ['PUT', `/admin/products/${P}`, { stock: 10 }, 400, 'invalid_request'],
      ['PUT', '/admin/products/bad.id', { stock: 10, shards: 2 }, 400, 'invalid_request'],
      ['POST', `/admin/products/${P}/restock`, { delta: 1.5 }, 400, 'invalid_request'],
      ['POST', `/admin/products/${P}/restock`, { delta: '5' }, 400, 'invalid_request'],
      ['POST', `/admin/products/${P}/restock`, '{"delta":', 400, 'invalid_request'],
      ['POST', `/admin/products/${P}/restock`, { delta: -11 }, 409, 'insufficient_stock'],
      ['POST', `/admin/products/${P}/reshard`, { shards: 1025 }, 400, 'invalid_request'],
      ['POST', `/admin/products/${P}/reshard`, { shards: '8' }, 400, 'invalid_request'],
      ['POST', '/admin/products/nobody/reshard', { shards: 2 }, 404, 'unknown_product'],
      ['POST', '/admin/products/nobody/restock', { delta: 2 }, 404, 'unknown_product'],
    ];
    for (const [method, path, body, status, error] of refused) {
      const r = await call(svc.url, method, path, body, as('mallory'));
      assert.equal(r.status, status, `${method} ${path} ${JSON.stringify(body)}: ${JSON.stringify(r.body)}`);
      assert.equal(r.body.error, error);
    }
    assert.deepEqual(await state(), before);
    assert.deepEqual(
      (await auditRows()).filter((r) => r.actor.includes('mallory')),
      [],
    );
  });

  it('in production the server refuses to start with an empty, default or short ADMIN_TOKEN', async () => {
    for (const token of ['', 'dev-admin-token', 'short']) {
      await assert.rejects(
        spawnService(infra, 'api', { NODE_ENV: 'production', ADMIN_TOKEN: token }),
        (err: Error) => /exited at start/.test(err.message) && /ADMIN_TOKEN/.test(err.message),
        `token ${JSON.stringify(token)}`,
      );
    }
  });
});
