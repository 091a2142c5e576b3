// Reshard and restock edge cases (same count, zero stock, unknown product, invalid counts) and
// concurrent admins: every change finishes, totals add up, refused changes change nothing.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  acceptedIds,
  assertConserved,
  assertOnlyExpectedStatuses,
  type Body,
  order,
  reconcile,
  reshard,
  restock,
  saleStatus,
  storm,
  tally,
} from '../harness/reshard.ts';
import { admin, call, createSale, drained } from '../harness/service.ts';
import { useService } from './support/suite.ts';

const { infra, svc } = useService();

describe('reshard edge cases', () => {
  it('reshard to the same count: a new generation with the same stock, split evenly', async () => {
    const P = 'same-count';
    await createSale(svc.url, P, { stock: 103, shards: 4 });
    const accepted: string[] = [];
    for (let i = 0; i < 3; i++) accepted.push((await order(svc.url, P, `s${i}`)).body.orderId as string);
    const before = await saleStatus(svc.url, P);
    const r = await reshard(svc.url, P, 4);
    assert.equal(r.status, 200, JSON.stringify(r.body));
    assert.deepEqual(r.body, {
      productId: P,
      shards: 4,
      generation: Number(before.generation) + 1,
      available: 100,
    });
    const s = await saleStatus(svc.url, P);
    assert.deepEqual(
      (s.shards as Body[]).map((x) => x.stock),
      [25, 25, 25, 25],
    );
    assert.deepEqual(
      (s.shards as Body[]).map((x) => x.key),
      [0, 1, 2, 3].map((i) => `stock:{${P}:${r.body.generation}:${i}}`),
    );
    assert.equal(s.sold, 3);
    assert.equal(s.total, 103);
    // The retired shards are gone; their stock is in the new generation only.
    assert.equal(await infra.client.exists(`stock:{${P}:${before.generation}:0}`), 0);
    await assertConserved(infra.pool, svc.url, P, accepted);
  });

  it('reshard with 0 stock: shards of 0, orders answered sold out, a restock sells again', async () => {
    const P = 'zero-stock';
    await createSale(svc.url, P, { stock: 2, shards: 2 });
    assert.equal((await order(svc.url, P, 'a')).status, 202);
    assert.equal((await order(svc.url, P, 'b')).status, 202);
    assert.equal((await order(svc.url, P, 'c')).body.error, 'sold_out');
    const r = await reshard(svc.url, P, 5);
    assert.equal(r.status, 200, JSON.stringify(r.body));
    assert.equal(r.body.available, 0);
    assert.equal(r.body.shards, 5);
    const s = await saleStatus(svc.url, P);
    assert.deepEqual(
      (s.shards as Body[]).map((x) => x.stock),
      [0, 0, 0, 0, 0],
    );
    assert.equal(s.sold, 2);
    assert.equal(s.total, 2);
    assert.equal((await order(svc.url, P, 'd')).body.error, 'sold_out');
    // A sale created empty can be resharded too.
    await createSale(svc.url, 'zero-from-start', { stock: 0, shards: 3 });
    const z = await reshard(svc.url, 'zero-from-start', 1);
    assert.equal(z.status, 200);
    assert.deepEqual(z.body, { productId: 'zero-from-start', shards: 1, generation: 2, available: 0 });
    // The restock clears the sold-out flag: the next order is accepted.
    assert.equal((await restock(svc.url, P, 1)).status, 200);
    assert.equal((await order(svc.url, P, 'e')).status, 202);
    const rec = await reconcile(svc.url, P);
    assert.equal(rec.body.ok, true, JSON.stringify(rec.body));
  });

  it('reshard of an unknown product: 404 and nothing created', async () => {
    const r = await reshard(svc.url, 'ghost', 4);
    assert.equal(r.status, 404);
    assert.equal(r.body.error, 'unknown_product');
    assert.equal((await call(svc.url, 'GET', '/admin/products/ghost', undefined, admin)).status, 404);
    // Refused before any lock is taken: not even a lock key is left behind.
    assert.deepEqual(await infra.client.keys('*ghost*'), []);
    assert.equal((await restock(svc.url, 'ghost', 5)).status, 404);
    assert.equal((await restock(svc.url, 'ghost', -5)).status, 404);
    assert.deepEqual(await infra.client.keys('*ghost*'), []);
  });

  it('invalid shard counts (0, 1025, 2.5, "8", -1, null, missing, bad JSON): 400 and nothing changed', async () => {
    const P = 'invalid-count';
    await createSale(svc.url, P, { stock: 40, shards: 4 });
    await order(svc.url, P, 'x');
    await drained(svc.url, P);
    const snapshot = async () => ({
      status: await saleStatus(svc.url, P),
      list: await infra.client.lrange(`sale:{${P}}:shards`, 0, -1),
      hash: await infra.client.hgetall(`sale:{${P}}`),
    });
    const before = await snapshot();
    for (const shards of [0, 1025, 2.5, '8', -1, null, undefined, 1e9, true]) {
      const r = await reshard(svc.url, P, shards);
      assert.equal(r.status, 400, `shards=${JSON.stringify(shards)}: ${JSON.stringify(r.body)}`);
      assert.equal(r.body.error, 'invalid_request');
      assert.match(String(r.body.message), /shards/);
    }
    const bad = await call(svc.url, 'POST', `/admin/products/${P}/reshard`, '{"shards": 8', admin);
    assert.equal(bad.status, 400);
    assert.equal((await reshard(svc.url, 'bad.id', 4)).status, 400);
    assert.deepEqual(await snapshot(), before);
    // The limits themselves are accepted.
    assert.equal((await reshard(svc.url, P, 1024)).status, 200);
    assert.equal((await saleStatus(svc.url, P)).available, 39);
    assert.equal((await reshard(svc.url, P, 1)).status, 200);
    const s = await saleStatus(svc.url, P);
    assert.deepEqual(
      (s.shards as Body[]).map((x) => x.stock),
      [39],
    );
  });
});

describe('concurrent admins', () => {
  it('two admins resharding at once: both finish, one after the other, state consistent', async () => {
    const P = 'two-admins';
    await createSale(svc.url, P, { stock: 500, shards: 4 });
    const g0 = Number((await saleStatus(svc.url, P)).generation);
    const [a, b] = await Promise.all([reshard(svc.url, P, 7), reshard(svc.url, P, 3)]);
    assert.equal(a.status, 200, JSON.stringify(a.body));
    assert.equal(b.status, 200, JSON.stringify(b.body));
    assert.deepEqual(new Set([a.body.generation, b.body.generation]), new Set([g0 + 1, g0 + 2]));
    const last = a.body.generation === g0 + 2 ? a : b;
    const s = await saleStatus(svc.url, P);
    assert.equal(s.generation, g0 + 2);
    assert.equal((s.shards as Body[]).length, last.body.shards);
    assert.equal(s.available, 500);
    assert.equal(a.body.available, 500);
    assert.equal(b.body.available, 500);
  });

  it('eight admin changes at once (reshards and restocks) under orders: all finish, totals add up', async () => {
    const P = 'many-admins';
    await createSale(svc.url, P, { stock: 1000, shards: 4 });
    const g0 = Number((await saleStatus(svc.url, P)).generation);
    const orders = storm({ urls: [svc.url], productId: P, inFlight: 50, minOrders: 400 });
    const changes = await Promise.all([
      reshard(svc.url, P, 2),
      restock(svc.url, P, 30),
      reshard(svc.url, P, 9),
      reshard(svc.url, P, 16),
      restock(svc.url, P, -20),
      reshard(svc.url, P, 1),
      restock(svc.url, P, 5),
      reshard(svc.url, P, 6),
    ]);
    const { outcomes } = await orders;
    for (const c of changes) assert.equal(c.status, 200, JSON.stringify(c.body));
    assert.equal(tally(outcomes)['409 sold_out'], undefined, 'stock was left all along: nobody is refused');
    assert.deepEqual(
      changes.map((c) => c.body.generation).sort((x, y) => Number(x) - Number(y)),
      Array.from({ length: 8 }, (_, i) => g0 + 1 + i),
    );
    assertOnlyExpectedStatuses(outcomes);
    const accepted = acceptedIds(outcomes);
    const s = await assertConserved(infra.pool, svc.url, P, accepted);
    assert.equal(s.total, 1000 + 30 - 20 + 5);
    assert.equal(s.generation, g0 + 8);
    assert.equal(s.available, 1015 - accepted.length);
  });

  it('a restock below 0 left is refused (409) and changes nothing', async () => {
    const P = 'restock-floor';
    await createSale(svc.url, P, { stock: 10, shards: 3 });
    const before = await saleStatus(svc.url, P);
    const r = await restock(svc.url, P, -11);
    assert.equal(r.status, 409);
    assert.equal(r.body.error, 'insufficient_stock');
    assert.deepEqual(await saleStatus(svc.url, P), before);
    const ok = await restock(svc.url, P, -10);
    assert.equal(ok.status, 200);
    assert.equal(ok.body.available, 0);
    assert.equal(ok.body.total, 0);
    assert.equal((await order(svc.url, P, 'u')).body.error, 'sold_out');
  });

  it('a restock past 10^9 units on sale in all is refused (409) and changes nothing', async () => {
    const P = 'restock-ceiling';
    await createSale(svc.url, P, { stock: 10, shards: 2 });
    await order(svc.url, P, 'u');
    await drained(svc.url, P);
    const before = await saleStatus(svc.url, P);
    const r = await restock(svc.url, P, 1_000_000_000 - 9);
    assert.equal(r.status, 409, JSON.stringify(r.body));
    assert.equal(r.body.error, 'stock_limit_exceeded');
    assert.deepEqual(await saleStatus(svc.url, P), before);
    const ok = await restock(svc.url, P, 1_000_000_000 - 10);
    assert.equal(ok.status, 200, JSON.stringify(ok.body));
    assert.equal(ok.body.total, 1_000_000_000);
  });

  it('a restock of 0 changes nothing: 200 with the current numbers, no new generation', async () => {
    const P = 'restock-zero';
    await createSale(svc.url, P, { stock: 10, shards: 2 });
    await order(svc.url, P, 'u');
    await drained(svc.url, P);
    const before = await saleStatus(svc.url, P);
    const r = await restock(svc.url, P, 0);
    assert.equal(r.status, 200, JSON.stringify(r.body));
    assert.equal(r.body.generation, before.generation);
    assert.equal(r.body.available, 9);
    assert.equal(r.body.total, 10);
    assert.deepEqual(await saleStatus(svc.url, P), before);
  });
});
