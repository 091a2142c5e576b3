// The buyer's identity as the deployment chooses: under BUYER_AUTH=jwt the client sends its token
// (a string, or a function asked before every request), orders without a userId, and reads and
// cancels its own order; without a token it gets an ApiError 401, and another buyer sees no order.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { SignJWT } from 'jose';
import { createSale } from '../../../harness/service.ts';
import { useService } from '../../../test/support/suite.ts';
import { ApiError, FlashsaleClient } from '../src/index.ts';

const SECRET = 'client-test-jwt-secret-0123456789abcdef';
const { svc } = useService({ BUYER_AUTH: 'jwt', BUYER_JWT_SECRET: SECRET });

const token = (sub: string) =>
  new SignJWT({})
    .setProtectedHeader({ alg: 'HS256' })
    .setSubject(sub)
    .setExpirationTime('10m')
    .sign(new TextEncoder().encode(SECRET));

describe('placeOrder under BUYER_AUTH=jwt', () => {
  it('orders, reads and cancels with a bearer token; no token is a 401; another buyer sees nothing', async () => {
    await createSale(svc.url, 'c-jwt', { stock: 4, shards: 1 });
    let asked = 0;
    const alice = new FlashsaleClient({
      baseUrl: svc.url,
      token: async () => {
        asked += 1;
        return token('alice');
      },
    });
    const result = await alice.placeOrder({ productId: 'c-jwt', quantity: 2 });
    assert.ok(result.outcome === 'ordered', JSON.stringify(result));
    assert.equal(result.order.userId, 'alice');
    assert.ok(asked >= 1);
    assert.equal((await alice.order(result.order.orderId)).status === 'cancelled', false);
    const bob = new FlashsaleClient({ baseUrl: svc.url, token: await token('bob') });
    const hidden = await bob.order(result.order.orderId).catch((err: unknown) => err);
    assert.ok(hidden instanceof ApiError && hidden.status === 404 && hidden.error === 'unknown_order');
    assert.equal((await alice.cancel(result.order.orderId)).status, 'cancelled');
    const anonymous = await new FlashsaleClient({ baseUrl: svc.url })
      .placeOrder({ productId: 'c-jwt' })
      .catch((e) => e);
    assert.ok(
      anonymous instanceof ApiError && anonymous.status === 401 && anonymous.error === 'unauthenticated',
    );
    assert.equal((await alice.product('c-jwt')).available, 4);
  });
});
