// Per-buyer and per-address rate limits of POST /api/orders (RATE_LIMIT_PER_USER, RATE_LIMIT_PER_IP)
// on the real service: over the limit an order is answered 429 rate_limited with Retry-After and
// changes nothing; X-Forwarded-For is believed only from a TRUST_PROXY address. The refill rates are
// tiny (one token per 1000 s), so no refill can happen within a test however slow the machine is.
// The token buckets' own arithmetic (refill, burst, memory bound) is tested directly at the end.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { call, createSale, type Reply } from '../harness/service.ts';
import { TokenBuckets } from '../src/http/token-buckets.ts';
import { type ApiOnly, startApiOnly } from './support/api-only.ts';
import { diffSnapshots, snapshotRedis } from './support/redis-snapshot.ts';
import { useInfra, useService } from './support/suite.ts';

const order = (url: string, userId: string, headers: Record<string, string> = {}) =>
  call(url, 'POST', '/api/orders', { productId: 'rl', userId }, headers);

function assertLimited(r: Reply, by: 'user' | 'address', what: string): void {
  assert.equal(r.status, 429, `${what}: ${r.status} ${JSON.stringify(r.body)}`);
  assert.equal(r.body.error, 'rate_limited', what);
  assert.equal(r.body.by, by, what);
  assert.ok(
    Number(r.headers.get('retry-after')) >= 1,
    `${what}: Retry-After ${r.headers.get('retry-after')}`,
  );
}

function assertAccepted(r: Reply, what: string): void {
  assert.equal(r.status, 202, `${what}: ${r.status} ${JSON.stringify(r.body)}`);
}

describe('per buyer', () => {
  // No writer: the queue and the reservations hold still for the snapshots.
  const { infra, setup, stopFirst } = useInfra();
  let svc: ApiOnly;
  setup(async () => {
    svc = stopFirst(await startApiOnly(infra, { RATE_LIMIT_PER_USER: '0.001:2', RATE_LIMIT_PER_IP: 'off' }));
  });

  it('a buyer past its burst is refused 429 rate_limited, changing nothing; other buyers are not', async () => {
    await createSale(svc.url, 'rl', { stock: 100, shards: 2 });
    assertAccepted(await order(svc.url, 'eager'), 'first');
    assertAccepted(await order(svc.url, 'eager'), 'second');
    const before = await snapshotRedis(infra.client);
    const rows = await infra.rows();
    assertLimited(await order(svc.url, 'eager', { 'idempotency-key': 'eager-3' }), 'user', 'third');
    assertLimited(await order(svc.url, 'eager'), 'user', 'fourth');
    assert.deepEqual(diffSnapshots(before, await snapshotRedis(infra.client)), []);
    assert.equal(await infra.rows(), rows);
    assertAccepted(await order(svc.url, 'patient'), 'another buyer');
  });
});

describe('per address, no trusted proxy', () => {
  const { svc } = useService({ RATE_LIMIT_PER_USER: 'off', RATE_LIMIT_PER_IP: '0.001:3' });

  it('counts the socket address: X-Forwarded-For from an untrusted client is ignored', async () => {
    await createSale(svc.url, 'rl', { stock: 100, shards: 2 });
    for (let i = 0; i < 3; i++) {
      assertAccepted(await order(svc.url, `a${i}`, { 'x-forwarded-for': `198.51.100.${i}` }), `order ${i}`);
    }
    assertLimited(
      await order(svc.url, 'a3', { 'x-forwarded-for': '198.51.100.99' }),
      'address',
      'a fourth buyer from the same socket address, claiming another',
    );
  });
});

describe('per address behind a trusted proxy', () => {
  // The test client connects from loopback: it plays the proxy.
  const { svc } = useService({
    RATE_LIMIT_PER_USER: 'off',
    RATE_LIMIT_PER_IP: '0.001:3',
    TRUST_PROXY: 'loopback',
  });

  it("counts the client address the proxy reports, and only the proxy's own hop", async () => {
    await createSale(svc.url, 'rl', { stock: 100, shards: 2 });
    const from = (address: string) => ({ 'x-forwarded-for': address });
    for (let i = 0; i < 3; i++)
      assertAccepted(await order(svc.url, `b${i}`, from('203.0.113.7')), `order ${i}`);
    assertLimited(await order(svc.url, 'b3', from('203.0.113.7')), 'address', 'fourth from 203.0.113.7');
    // A client cannot escape by prepending an address of its own: the proxy appends the real one.
    assertLimited(
      await order(svc.url, 'b4', from('192.0.2.1, 203.0.113.7')),
      'address',
      'a forged first hop before the real client',
    );
    assertAccepted(await order(svc.url, 'c0', from('203.0.113.8')), 'another client address');
  });
});

describe('token buckets', () => {
  it('allow `burst` at once, then `rate` a second; answer the seconds until the next token', () => {
    const b = new TokenBuckets({ rate: 2, burst: 3 });
    for (let i = 0; i < 3; i++) assert.equal(b.take('k', 0), 0);
    assert.equal(b.take('k', 0), 0.5);
    assert.equal(b.take('k', 250), 0.25, 'half a token refilled');
    assert.equal(b.take('k', 500), 0, 'a whole token after 0.5 s');
    assert.equal(b.take('k', 10_000), 0, 'refilled');
    assert.equal(b.take('k', 10_000), 0);
    assert.equal(b.take('k', 10_000), 0, 'but never past the burst');
    assert.ok(b.take('k', 10_000) > 0);
    assert.equal(b.take('other', 10_000), 0, 'keys are independent');
  });

  it('hold at most maxKeys buckets, dropping the least recently used', () => {
    const b = new TokenBuckets({ rate: 0.001, burst: 1 }, 3);
    for (const k of ['a', 'b', 'c']) assert.equal(b.take(k, 0), 0);
    assert.ok(b.take('a', 1) > 0, 'a is empty (and now the most recently used)');
    assert.equal(b.take('d', 2), 0, 'd takes the place of b, the least recently used');
    assert.equal(b.size, 3);
    assert.ok(b.take('a', 3) > 0, 'a was kept');
    assert.ok(b.take('c', 4) > 0, 'c was kept');
    assert.equal(b.take('b', 5), 0, 'b was dropped: it comes back full');
    assert.equal(b.size, 3);
  });
});
