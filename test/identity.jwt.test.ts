// BUYER_AUTH=jwt over HTTP: the buyer is the verified `sub`; forged, expired, wrong-audience and
// unsigned tokens get 401 and change nothing; orders are private to their buyer; the per-user limit
// counts `sub`; with PAYMENT_WEBHOOK_SECRET a buyer's token alone cannot pay.
import assert from 'node:assert/strict';
import { generateKeyPairSync } from 'node:crypto';
import { once } from 'node:events';
import type { AddressInfo } from 'node:net';
import { describe, it } from 'node:test';
import express from 'express';
import { SignJWT } from 'jose';
import { admin, call, createSale } from '../harness/service.ts';
import { AdminBrake } from '../src/http/admin-brake.ts';
import { BuyerIdentity } from '../src/http/buyer-identity.ts';
import { BuyerTokens } from '../src/http/buyer-tokens.ts';
import { errorAnswer } from '../src/http/errors.ts';
import { FailedAttempts } from '../src/http/failed-attempts.ts';
import { buyerKey } from '../src/orders/keys.ts';
import { diffSnapshots, snapshotRedis } from './support/redis-snapshot.ts';
import { useService } from './support/suite.ts';

const SECRET = 'buyer-jwt-secret-for-tests-0123456789abcdef';
const ISSUER = 'https://login.example';
const AUDIENCE = 'flashsale';

const { infra, svc } = useService({
  BUYER_AUTH: 'jwt',
  BUYER_JWT_SECRET: SECRET,
  BUYER_JWT_ISSUER: ISSUER,
  BUYER_JWT_AUDIENCE: AUDIENCE,
  PAYMENT_WEBHOOK_SECRET: 'payment-webhook-secret-0123456789abcdef',
});

interface Claims {
  sub?: string;
  iss?: string;
  aud?: string;
  /** Seconds from now; negative: expired. */
  expiresIn?: number;
  key?: string;
}

async function token(c: Claims = {}): Promise<string> {
  const jwt = new SignJWT({})
    .setProtectedHeader({ alg: 'HS256' })
    .setIssuer(c.iss ?? ISSUER)
    .setAudience(c.aud ?? AUDIENCE)
    .setIssuedAt()
    .setExpirationTime(Math.floor(Date.now() / 1000) + (c.expiresIn ?? 600));
  if (c.sub !== '') jwt.setSubject(c.sub ?? 'alice');
  return jwt.sign(new TextEncoder().encode(c.key ?? SECRET));
}

/** A token with `alg: none` and no signature, claiming to be alice. */
function unsigned(): string {
  const part = (o: object) => Buffer.from(JSON.stringify(o)).toString('base64url');
  const exp = Math.floor(Date.now() / 1000) + 600;
  return `${part({ alg: 'none', typ: 'JWT' })}.${part({ sub: 'alice', iss: ISSUER, aud: AUDIENCE, exp })}.`;
}

const bearer = (t: string) => ({ authorization: `Bearer ${t}` });
const orderAs = async (t: string, body: object) => call(svc.url, 'POST', '/api/orders', body, bearer(t));

describe('BUYER_AUTH=jwt', () => {
  it('a missing, forged, expired, wrong-issuer, wrong-audience or unsigned token gets 401 and changes nothing', async () => {
    await createSale(svc.url, 'jwt-bad', { stock: 5, shards: 1, perUserLimit: 2 });
    // The sale's keys, Idempotency-Keys and per-user counts (the writer's own keys tick on their own).
    const ours = { exclude: (key: string) => !key.includes('jwt-bad') && !key.startsWith('idem:') };
    const before = await snapshotRedis(infra.client, ours);
    const bad = {
      none: undefined,
      forged: await token({ key: 'another-secret-of-at-least-32-characters!!' }),
      expired: await token({ expiresIn: -3600 }),
      'wrong issuer': await token({ iss: 'https://evil.example' }),
      'wrong audience': await token({ aud: 'another-service' }),
      'no sub': await token({ sub: '' }),
      'alg none': unsigned(),
      garbage: 'not.a.jwt',
    };
    for (const [what, t] of Object.entries(bad)) {
      const headers = t === undefined ? {} : bearer(t);
      const r = await call(
        svc.url,
        'POST',
        '/api/orders',
        { productId: 'jwt-bad' },
        {
          ...headers,
          'idempotency-key': `k-${what.replace(/ /g, '-')}`,
        },
      );
      assert.deepEqual(
        [r.status, r.body.error],
        [401, 'unauthenticated'],
        `${what}: ${JSON.stringify(r.body)}`,
      );
    }
    assert.deepEqual(diffSnapshots(before, await snapshotRedis(infra.client, ours)), []);
    assert.equal((await call(svc.url, 'GET', '/api/products/jwt-bad')).body.available, 5);
  });

  it('the buyer is sub: a body userId must be absent or equal it', async () => {
    await createSale(svc.url, 'jwt-sub', { stock: 5, shards: 1 });
    const alice = await token({ sub: 'alice' });
    const mine = await orderAs(alice, { productId: 'jwt-sub' });
    assert.equal(mine.status, 202, JSON.stringify(mine.body));
    assert.equal(mine.body.userId, 'alice');
    assert.equal((await orderAs(alice, { productId: 'jwt-sub', userId: 'alice' })).status, 202);
    const other = await orderAs(alice, { productId: 'jwt-sub', userId: 'bob' });
    assert.deepEqual([other.status, other.body.error], [403, 'buyer_mismatch']);
    assert.equal((await call(svc.url, 'GET', '/api/products/jwt-sub')).body.available, 3);
  });

  it("another buyer's order is 404 on GET and refused on cancel; its buyer sees it without internals, the admin with them", async () => {
    await createSale(svc.url, 'jwt-private', { stock: 5, shards: 2, paymentTimeoutSec: 3600 });
    const [alice, bob] = await Promise.all([token({ sub: 'alice' }), token({ sub: 'bob' })]);
    const placed = await orderAs(alice, { productId: 'jwt-private' });
    assert.equal(placed.status, 202);
    const path = `/api/orders/${placed.body.orderId}`;
    const byBob = await call(svc.url, 'GET', path, undefined, bearer(bob));
    assert.deepEqual([byBob.status, byBob.body.error], [404, 'unknown_order']);
    const anonymous = await call(svc.url, 'GET', path);
    assert.deepEqual([anonymous.status, anonymous.body.error], [401, 'unauthenticated']);
    const own = await call(svc.url, 'GET', path, undefined, bearer(alice));
    assert.equal(own.status, 200);
    assert.deepEqual(Object.keys(own.body).sort(), [
      'orderId',
      'payBy',
      'paymentDueAt',
      'productId',
      'quantity',
      'status',
      'userId',
    ]);
    // The deadline as ISO 8601 (as the sale's startsAt), the same instant as payBy's epoch ms.
    assert.equal(own.body.paymentDueAt, new Date(own.body.payBy as number).toISOString());
    const full = await call(svc.url, 'GET', path, undefined, admin);
    assert.equal(full.status, 200);
    for (const field of ['shardKey', 'token', 'generation', 'reservedAt'])
      assert.ok(field in full.body, field);

    const cancelByBob = await call(svc.url, 'POST', `${path}/cancel`, {}, bearer(bob));
    // As for GET: another buyer's order answers as one that does not exist.
    assert.deepEqual([cancelByBob.status, cancelByBob.body], [byBob.status, { ...byBob.body }]);
    const spoofed = await call(svc.url, 'POST', `${path}/cancel`, { userId: 'alice' }, bearer(bob));
    assert.deepEqual([spoofed.status, spoofed.body.error], [403, 'buyer_mismatch']);
    const still = (await call(svc.url, 'GET', path, undefined, bearer(alice))).body.status;
    assert.ok(still === 'reserved' || still === 'confirmed', String(still));

    // A buyer's token alone cannot pay (PAYMENT_WEBHOOK_SECRET is set): 401, still unpaid.
    const paid = await call(svc.url, 'POST', `${path}/pay`, {}, bearer(alice));
    assert.deepEqual([paid.status, paid.body.error], [401, 'invalid_signature']);
    const cancelled = await call(svc.url, 'POST', `${path}/cancel`, {}, bearer(alice));
    assert.deepEqual([cancelled.status, cancelled.body.status], [200, 'cancelled']);
  });

  it('the per-user limit counts sub', async () => {
    await createSale(svc.url, 'jwt-limit', { stock: 10, shards: 2, perUserLimit: 1 });
    const carol = await token({ sub: 'carol' });
    assert.equal((await orderAs(carol, { productId: 'jwt-limit' })).status, 202);
    const again = await orderAs(await token({ sub: 'carol' }), { productId: 'jwt-limit' });
    assert.deepEqual([again.status, again.body.error], [409, 'limit_exceeded']);
    assert.equal(await infra.client.get(buyerKey('jwt-limit', 'carol')), '1');
    assert.equal((await orderAs(await token({ sub: 'dave' }), { productId: 'jwt-limit' })).status, 202);
  });
});

describe('BuyerTokens with a public key', () => {
  for (const [alg, options] of [
    ['RS256', { type: 'rsa', modulusLength: 2048 }],
    ['ES256', { type: 'ec', namedCurve: 'P-256' }],
  ] as const) {
    it(`${alg}: verifies the key's algorithm only; another key or HS256 with the public key as secret is refused`, async () => {
      const pair = (
        options.type === 'rsa'
          ? generateKeyPairSync('rsa', { modulusLength: options.modulusLength })
          : generateKeyPairSync('ec', { namedCurve: options.namedCurve })
      ) as ReturnType<typeof generateKeyPairSync>;
      const pem = pair.publicKey.export({ type: 'spki', format: 'pem' }).toString();
      const tokens = new BuyerTokens({ publicKeyPem: pem, clockSkewSeconds: 5 });
      const sign = (key: Parameters<SignJWT['sign']>[0], header: string) =>
        new SignJWT({})
          .setProtectedHeader({ alg: header })
          .setSubject('erin')
          .setExpirationTime('5m')
          .sign(key);
      assert.equal(await tokens.subject(await sign(pair.privateKey, alg)), 'erin');
      const other = (
        options.type === 'rsa'
          ? generateKeyPairSync('rsa', { modulusLength: options.modulusLength })
          : generateKeyPairSync('ec', { namedCurve: options.namedCurve })
      ) as ReturnType<typeof generateKeyPairSync>;
      await assert.rejects(tokens.subject(await sign(other.privateKey, alg)), { code: 'unauthenticated' });
      // Algorithm confusion: the public key's bytes used as an HMAC secret.
      await assert.rejects(tokens.subject(await sign(new TextEncoder().encode(pem), 'HS256')), {
        code: 'unauthenticated',
      });
    });
  }
});

describe('BUYER_AUTH=jwt: the admin view of an order behind the admin brake', () => {
  it('a bearer that is neither the admin token nor a buyer token answers as none (401), then 429; a buyer token and the admin token still pass', async () => {
    const tokens = new BuyerTokens({
      secret: SECRET,
      issuer: ISSUER,
      audience: AUDIENCE,
      clockSkewSeconds: 5,
    });
    const brake = new AdminBrake(
      'the-admin-token-0123456789abcdef',
      new FailedAttempts({ rate: 0.001, burst: 3 }),
    );
    const identity = new BuyerIdentity({ mode: 'jwt', tokens, admin: brake, trusts: () => false });
    const app = express();
    app.get('/view', (req, res, next) => identity.viewer(req).then((v) => res.json(v), next));
    app.use((err: unknown, _req: express.Request, res: express.Response, _next: express.NextFunction) => {
      const a = errorAnswer(err);
      res.status(a.status).json(a.body);
    });
    const server = app.listen(0, '127.0.0.1');
    await once(server, 'listening');
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    try {
      const none = await call(url, 'GET', '/view');
      assert.deepEqual([none.status, none.body.error], [401, 'unauthenticated']);
      for (let i = 0; i < 3; i++) {
        const r = await call(url, 'GET', '/view', undefined, bearer(`guess-${i}`));
        // The same status and code as no token (the message says why the bearer is no buyer token).
        assert.deepEqual([r.status, r.body.error], [none.status, none.body.error], `guess ${i}`);
      }
      const braked = await call(url, 'GET', '/view', undefined, bearer('guess-3'));
      assert.deepEqual([braked.status, braked.body.error], [429, 'too_many_attempts']);
      const buyer = await call(url, 'GET', '/view', undefined, bearer(await token({ sub: 'alice' })));
      assert.deepEqual([buyer.status, buyer.body], [200, { kind: 'buyer', buyer: 'alice' }]);
      const adminView = await call(
        url,
        'GET',
        '/view',
        undefined,
        bearer('the-admin-token-0123456789abcdef'),
      );
      assert.deepEqual([adminView.status, adminView.body], [200, { kind: 'admin' }]);
    } finally {
      server.close();
    }
  });
});
