// The admin door (issue 25): weak and published tokens refused outside a development run, NODE_ENV
// read case-insensitively, BUYER_AUTH explicit; wrong tokens braked per address; an admin change
// records who and what, refuses control characters, and fails when its audit row cannot be written.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { admin, call, createSale } from '../harness/service.ts';
import { ConfigError } from '../src/config/errors.ts';
import { loadConfig } from '../src/config/load.ts';
import { useService } from './support/suite.ts';

const STRONG = 'a-strong-admin-token-of-32-chars-or-more-0123';
/** The waiting room's key, required outside a development run as well. */
const QUEUE_SECRET = 'a-queue-secret-of-32-characters-or-more-0123';
const refuses = (env: Record<string, string>, pattern: RegExp) =>
  assert.throws(
    () => loadConfig(env),
    (err: unknown) => err instanceof ConfigError && pattern.test(err.message),
  );

describe('admin token and buyer auth rules (loadConfig)', () => {
  it('outside a development run: tokens under 32 characters and published defaults are refused', () => {
    for (const NODE_ENV of ['production', 'development', 'Production']) {
      refuses({ NODE_ENV, ADMIN_TOKEN: 'x', BUYER_AUTH: 'none' }, /ADMIN_TOKEN.*32/);
      refuses(
        { NODE_ENV, ADMIN_TOKEN: 'local-dev-admin-token-change-me', BUYER_AUTH: 'none' },
        /ADMIN_TOKEN/,
      );
    }
    refuses({ ADMIN_TOKEN: 'x', BUYER_AUTH: 'none' }, /ADMIN_TOKEN/);
    assert.equal(
      loadConfig({ NODE_ENV: 'production', ADMIN_TOKEN: STRONG, BUYER_AUTH: 'none', QUEUE_SECRET }).admin
        .token,
      STRONG,
    );
  });

  it('NODE_ENV is compared case-insensitively: Production with FLASHSALE_DEV_RUN=1 gets no development token', () => {
    for (const NODE_ENV of ['Production', 'PRODUCTION', ' production ']) {
      refuses({ NODE_ENV, FLASHSALE_DEV_RUN: '1' }, /ADMIN_TOKEN must be set/);
      refuses(
        { NODE_ENV, FLASHSALE_DEV_RUN: '1', ADMIN_TOKEN: 'short-but-dev-run', BUYER_AUTH: 'none' },
        /32/,
      );
    }
    const dev = loadConfig({ FLASHSALE_DEV_RUN: '1' });
    assert.deepEqual(
      [dev.admin.token, dev.admin.devToken, dev.buyer.auth],
      ['dev-admin-token', true, 'none'],
    );
  });

  it('BUYER_AUTH must be explicit outside a development run, with what its mode needs', () => {
    const base = { NODE_ENV: 'production', ADMIN_TOKEN: STRONG, QUEUE_SECRET };
    refuses(base, /BUYER_AUTH must be set/);
    refuses({ ...base, BUYER_AUTH: 'jwt' }, /BUYER_JWT_SECRET/);
    refuses({ ...base, BUYER_AUTH: 'jwt', BUYER_JWT_SECRET: 'too-short' }, /BUYER_JWT_SECRET/);
    refuses({ ...base, BUYER_AUTH: 'jwt', BUYER_JWT_PUBLIC_KEY: 'not a pem' }, /BUYER_JWT_PUBLIC_KEY/);
    refuses({ ...base, BUYER_AUTH: 'header' }, /TRUST_PROXY/);
    refuses({ ...base, BUYER_AUTH: 'none', PAYMENT_WEBHOOK_SECRET: 'short' }, /PAYMENT_WEBHOOK_SECRET/);
    refuses({ ...base, BUYER_AUTH: 'none', HTTP_HEADERS_TIMEOUT_MS: '30000' }, /HTTP_HEADERS_TIMEOUT_MS/);
    refuses({ ...base, BUYER_AUTH: 'none', HTTP_BODY_TIMEOUT_MS: '30000' }, /HTTP_BODY_TIMEOUT_MS/);
    const jwt = loadConfig({ ...base, BUYER_AUTH: 'jwt', BUYER_JWT_SECRET: 'x'.repeat(32) });
    assert.equal(jwt.buyer.auth, 'jwt');
    assert.equal(loadConfig({ ...base, BUYER_AUTH: 'header', TRUST_PROXY: '10.0.0.2' }).buyer.auth, 'header');
  });
});

describe('the admin door over HTTP', () => {
  // X-Forwarded-For from loopback is believed, so a test can speak from several addresses.
  const { infra, svc } = useService({ TRUST_PROXY: 'loopback', ADMIN_AUTH_FAILURES: '0.001:3' });
  const from = (address: string, token: string) => ({
    'x-forwarded-for': address,
    authorization: `Bearer ${token}`,
  });
  const auditRows = async () =>
    Number((await infra.pool.query('select count(*)::int as n from admin_audit')).rows[0].n);

  it('an address that sent too many wrong tokens gets 429 for wrong and missing tokens; the right one is still honoured; others are not affected', async () => {
    await createSale(svc.url, 'door', { stock: 5, shards: 1 });
    const path = '/admin/products/door';
    const none = await call(svc.url, 'GET', path, undefined, { 'x-forwarded-for': '10.9.9.9' });
    for (let i = 0; i < 3; i++) {
      const r = await call(svc.url, 'GET', path, undefined, from('10.9.9.9', `guess-${i}`));
      // A wrong token answers exactly as no token does: the answer tells nothing of the guess.
      assert.deepEqual([r.status, r.body], [none.status, none.body]);
    }
    assert.deepEqual([none.status, none.body.error], [401, 'unauthorized']);
    const braked = await call(svc.url, 'GET', path, undefined, from('10.9.9.9', 'guess-3'));
    assert.deepEqual([braked.status, braked.body.error], [429, 'too_many_attempts']);
    assert.ok(Number(braked.headers.get('retry-after')) >= 1);
    const noToken = await call(svc.url, 'GET', path, undefined, { 'x-forwarded-for': '10.9.9.9' });
    assert.deepEqual([noToken.status, noToken.body.error], [429, 'too_many_attempts']);
    // The admin behind the same address (a NAT) is not locked out; the guesses go on being refused.
    const right = await call(svc.url, 'GET', path, undefined, from('10.9.9.9', admin.authorization.slice(7)));
    assert.equal(right.status, 200);
    assert.equal((await call(svc.url, 'GET', path, undefined, from('10.9.9.9', 'guess-4'))).status, 429);
    assert.equal((await call(svc.url, 'GET', path, undefined, admin)).status, 200);
    assert.equal((await call(svc.url, 'GET', path, undefined, from('10.8.8.8', 'one-guess'))).status, 401);
    const metrics = await (await fetch(`${svc.url}/metrics`)).text();
    assert.match(metrics, /flashsale_admin_token_failures_total\{braked="true"\} [1-9]/);
  });

  it('the admin view of GET /api/orders/:id meets the same brake: a wrong token answers as none, then 429', async () => {
    const address = '10.7.7.7';
    const order = '/api/orders/no-such-order';
    const none = await call(svc.url, 'GET', order, undefined, { 'x-forwarded-for': address });
    // One wrong token on the admin routes and the rest here: one brake, whichever door counts.
    const first = await call(svc.url, 'GET', '/admin/products/door', undefined, from(address, 'g-0'));
    assert.equal(first.status, 401);
    for (let i = 1; i < 3; i++) {
      const r = await call(svc.url, 'GET', order, undefined, from(address, `g-${i}`));
      assert.deepEqual([r.status, r.body], [none.status, none.body], `guess ${i}`);
    }
    const braked = await call(svc.url, 'GET', order, undefined, from(address, 'g-3'));
    assert.deepEqual([braked.status, braked.body.error], [429, 'too_many_attempts']);
    const right = await call(svc.url, 'GET', order, undefined, from(address, admin.authorization.slice(7)));
    assert.deepEqual([right.status, right.body.error], [404, 'unknown_order']);
    // Without a token the order view stays open to anyone (BUYER_AUTH=none): no brake on that.
    const anyone = await call(svc.url, 'GET', order, undefined, { 'x-forwarded-for': address });
    assert.deepEqual([anyone.status, anyone.body], [none.status, none.body]);
  });

  it('the audit row names the authenticated actor and the parsed change; X-Admin-Actor is only a label', async () => {
    await createSale(svc.url, 'who', { stock: 5, shards: 1 });
    const r = await call(
      svc.url,
      'POST',
      '/admin/products/who/restock',
      { delta: 2, note: 'restock after count', ignored: 'x' },
      { ...admin, 'x-admin-actor': 'root' },
    );
    assert.equal(r.status, 200);
    const row = (
      await infra.pool.query(
        "select actor, request from admin_audit where action = 'restock' and product_id = 'who'",
      )
    ).rows[0];
    assert.equal(row.actor, 'admin-token@127.0.0.1 label:root');
    assert.deepEqual(row.request, { delta: 2, note: 'restock after count' });
  });

  it('a note with control characters is 400 and changes nothing', async () => {
    await createSale(svc.url, 'nul', { stock: 5, shards: 1 });
    const rows = await auditRows();
    for (const note of ['\u0000', 'a\u0007b', 'line\nbreak']) {
      const r = await call(svc.url, 'POST', '/admin/products/nul/restock', { delta: 1, note }, admin);
      assert.deepEqual([r.status, r.body.error], [400, 'invalid_request'], JSON.stringify(note));
    }
    assert.equal((await call(svc.url, 'GET', '/api/products/nul')).body.available, 5);
    assert.equal(await auditRows(), rows);
  });

  it('an admin change whose audit row cannot be written does not answer success', async () => {
    await createSale(svc.url, 'unaudited', { stock: 5, shards: 1 });
    await infra.pool.query('alter table admin_audit add constraint audit_down check (false) not valid');
    try {
      const r = await call(svc.url, 'POST', '/admin/products/unaudited/restock', { delta: 1 }, admin);
      assert.ok(r.status >= 500, `${r.status} ${JSON.stringify(r.body)}`);
    } finally {
      await infra.pool.query('alter table admin_audit drop constraint audit_down');
    }
  });
});
