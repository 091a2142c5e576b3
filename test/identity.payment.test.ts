// "Paid" comes from the payment provider: with PAYMENT_WEBHOOK_SECRET, a pay call without a valid
// signature, signed over another body, or with a timestamp outside the 5-minute window (a replay)
// gets 401 and changes nothing; the provider's signed call pays. And BUYER_AUTH=header: X-Buyer-Id is
// believed only from a TRUST_PROXY peer.
import assert from 'node:assert/strict';
import type { AddressInfo } from 'node:net';
import { after, describe, it } from 'node:test';
import express from 'express';
import { call, createSale, placeOrder } from '../harness/service.ts';
import { AdminBrake } from '../src/http/admin-brake.ts';
import { BuyerIdentity } from '../src/http/buyer-identity.ts';
import { errorAnswer } from '../src/http/errors.ts';
import { paymentSignature } from '../src/http/payment-signature.ts';
import { compileTrust } from '../src/http/trust.ts';
import { rawRequest } from './support/raw-http.ts';
import { useService } from './support/suite.ts';

const SECRET = 'payment-webhook-secret-0123456789abcdef';
const { svc } = useService({ PAYMENT_WEBHOOK_SECRET: SECRET });

const now = () => Math.floor(Date.now() / 1000);

/** A pay call as the provider (or a forger) sends it: the raw body and the two headers. */
function signedPay(orderId: string, body: string, headers: Record<string, string>) {
  return call(svc.url, 'POST', `/api/orders/${orderId}/pay`, body, headers);
}

const signed = (body: string, timestamp = String(now()), secret = SECRET) => ({
  'x-payment-timestamp': timestamp,
  'x-payment-signature': paymentSignature(secret, timestamp, body),
});

describe('PAYMENT_WEBHOOK_SECRET', () => {
  it('unsigned, forged, re-bodied and replayed pay calls get 401 and change nothing; the signed call pays', async () => {
    await createSale(svc.url, 'paid', { stock: 3, shards: 1, paymentTimeoutSec: 3600 });
    const placed = await placeOrder(svc.url, { productId: 'paid', userId: 'alice' });
    assert.equal(placed.status, 202);
    const id = placed.body.orderId as string;
    const body = JSON.stringify({ userId: 'alice' });
    const stale = String(now() - 6 * 60);
    const refused: Array<[string, Record<string, string>]> = [
      ['no headers', {}],
      ['no signature', { 'x-payment-timestamp': String(now()) }],
      ['no timestamp', { 'x-payment-signature': signed(body)['x-payment-signature'] }],
      ['wrong secret', signed(body, String(now()), 'another-secret-0123456789abcdef0123')],
      ['signed over another body', signed(JSON.stringify({ userId: 'bob' }))],
      ['replayed (timestamp 6 minutes old)', signed(body, stale)],
      ['from the future', signed(body, String(now() + 6 * 60))],
      ['timestamp changed after signing', { ...signed(body), 'x-payment-timestamp': String(now() - 1) }],
      ['not hex', { ...signed(body), 'x-payment-signature': 'sha256=zz' }],
    ];
    for (const [what, headers] of refused) {
      const r = await signedPay(id, body, headers);
      assert.deepEqual(
        [r.status, r.body.error],
        [401, 'invalid_signature'],
        `${what}: ${JSON.stringify(r.body)}`,
      );
    }
    const status = async () => (await call(svc.url, 'GET', `/api/orders/${id}`)).body.status;
    assert.ok(['reserved', 'confirmed'].includes(String(await status())));
    const call1 = signed(body);
    const paid = await signedPay(id, body, call1);
    assert.deepEqual([paid.status, paid.body], [200, { orderId: id, status: 'paid' }]);
    assert.equal(await status(), 'paid');
    // The same signed call again: for its own order it answers the same; replayed against another
    // order of the same buyer (the signature does not name the order) it is refused, and pays nothing.
    const again = await signedPay(id, body, call1);
    assert.deepEqual([again.status, again.body], [200, { orderId: id, status: 'paid' }]);
    const second = await placeOrder(svc.url, { productId: 'paid', userId: 'alice' });
    const other = second.body.orderId as string;
    const replayed = await signedPay(other, body, call1);
    assert.deepEqual([replayed.status, replayed.body.error], [401, 'invalid_signature']);
    const otherStatus = (await call(svc.url, 'GET', `/api/orders/${other}`)).body.status;
    assert.ok(['reserved', 'confirmed'].includes(String(otherStatus)), String(otherStatus));
  });

  it('the signature is checked over the body sent, whatever the path spelling: other spellings are refused, an empty-body signature never pays', async () => {
    await createSale(svc.url, 'spelled', { stock: 3, shards: 1, paymentTimeoutSec: 3600 });
    const placed = await placeOrder(svc.url, { productId: 'spelled', userId: 'alice' });
    const id = placed.body.orderId as string;
    const body = JSON.stringify({ userId: 'alice' });
    const spellings = [
      `/API/ORDERS/${id}/PAY`,
      `/api/orders/${id}/PAY`,
      `/Api/Orders/${id}/Pay`,
      `/api/orders/${id}/pay/`,
      `/api/orders/${id}/p%61y`,
      `/api/%6frders/${id}/pay`,
      `/api/orders/${id.replace('.', '%2E')}/pay`,
      `//api/orders/${id}/pay`,
      `/api/orders/./${id}/pay`,
      `/api/x/../orders/${id}/pay`,
      `${svc.url}/api/orders/${id}/pay`,
    ];
    for (const path of spellings) {
      for (const [what, signedOver] of [
        ['the body', body],
        ['an empty body', ''],
      ]) {
        const r = await rawRequest(svc.url, 'POST', path, body, signed(signedOver as string));
        assert.ok(r.status >= 400 && r.status < 500, `${path} signed over ${what}: ${r.status}`);
        assert.equal(typeof r.body.error, 'string', `${path}: an error code`);
      }
    }
    const status = async () => (await call(svc.url, 'GET', `/api/orders/${id}`)).body.status;
    assert.ok(['reserved', 'confirmed'].includes(String(await status())), 'no spelling paid');
    const canonical = `/api/orders/${id}/pay`;
    const empty = await rawRequest(svc.url, 'POST', canonical, body, signed(''));
    assert.deepEqual([empty.status, empty.body.error], [401, 'invalid_signature']);
    const paid = await rawRequest(svc.url, 'POST', canonical, body, signed(body));
    assert.deepEqual([paid.status, paid.body], [200, { orderId: id, status: 'paid' }]);
  });

  it('a buyer cannot pay by naming themselves: the body alone is not enough', async () => {
    await createSale(svc.url, 'paid-2', { stock: 1, shards: 1, paymentTimeoutSec: 3600 });
    const placed = await placeOrder(svc.url, { productId: 'paid-2', userId: 'carol' });
    const r = await call(svc.url, 'POST', `/api/orders/${placed.body.orderId}/pay`, { userId: 'carol' });
    assert.deepEqual([r.status, r.body.error], [401, 'invalid_signature']);
    const c = await call(svc.url, 'POST', `/api/orders/${placed.body.orderId}/cancel`, { userId: 'carol' });
    assert.deepEqual([c.status, c.body.status], [200, 'cancelled']);
  });
});

describe('BUYER_AUTH=header', () => {
  /** A bare app with the identity middleware, trusting `trustProxy`; answers the bound body. */
  async function headerApp(trustProxy: string[]) {
    const app = express();
    app.set('trust proxy', trustProxy);
    app.use(express.json());
    const identity = new BuyerIdentity({
      mode: 'header',
      admin: new AdminBrake('not-the-token'),
      trusts: (address) => compileTrust(trustProxy)(address, 0),
    });
    app.post('/who', identity.asBuyer, (req, res) => {
      res.json(req.body);
    });
    app.use((err: unknown, _req: express.Request, res: express.Response, _next: express.NextFunction) => {
      const a = errorAnswer(err);
      res.status(a.status).json(a.body);
    });
    const server = app.listen(0, '127.0.0.1');
    await new Promise((resolve) => server.once('listening', resolve));
    after(() => server.close());
    return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  }

  it('from a trusted proxy the header is the buyer; a body naming another buyer is refused', async () => {
    const url = await headerApp(['loopback']);
    const ok = await call(url, 'POST', '/who', { productId: 'p' }, { 'x-buyer-id': 'dora' });
    assert.deepEqual([ok.status, ok.body], [200, { productId: 'p', userId: 'dora' }]);
    const mismatch = await call(url, 'POST', '/who', { userId: 'eve' }, { 'x-buyer-id': 'dora' });
    assert.deepEqual([mismatch.status, mismatch.body.error], [403, 'buyer_mismatch']);
    for (const headers of [{}, { 'x-buyer-id': 'a{b}' }, { 'x-buyer-id': '' }] as Record<string, string>[]) {
      const r = await call(url, 'POST', '/who', {}, headers);
      assert.deepEqual([r.status, r.body.error], [401, 'unauthenticated'], JSON.stringify(headers));
    }
  });

  it('from any other peer the header is not believed (401), whatever X-Forwarded-For says', async () => {
    const url = await headerApp(['10.1.2.3']);
    const r = await call(url, 'POST', '/who', {}, { 'x-buyer-id': 'dora', 'x-forwarded-for': '10.1.2.3' });
    assert.deepEqual([r.status, r.body.error], [401, 'unauthenticated']);
  });
});
