// DESIGN.md §5.6, property-based: >= 2,000 generated bad order bodies never get a 5xx or a 202, each
// gets its documented code, and no key changes (fast-check).
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { call } from '../harness/service.ts';
import { PRODUCT_ID_PATTERN } from '../src/inventory/keys.ts';
import { MAX_ORDER_QUANTITY, USER_ID, useBadInput } from './support/bad-input.ts';

const { api, assertUnchanged, assertRefused } = useBadInput();

describe('property: generated bad order bodies', () => {
  const json = (v: unknown) => JSON.stringify(v);
  const knownProduct = fc.constantFrom('live', 'limited', 'gone');
  const goodUser = fc.stringMatching(/^[A-Za-z0-9_.:@-]{1,24}$/);
  const goodQuantity = fc.option(fc.integer({ min: 1, max: MAX_ORDER_QUANTITY }), { nil: undefined });
  const notString = fc.oneof(
    fc.integer(),
    fc.double(),
    fc.boolean(),
    fc.constant(null),
    fc.array(fc.string(), { maxLength: 3 }),
    fc.dictionary(fc.string({ maxLength: 5 }), fc.string({ maxLength: 5 }), { maxKeys: 3 }),
  );
  const badProductId = fc.oneof(
    fc.string({ maxLength: 80 }).filter((s) => !PRODUCT_ID_PATTERN.test(s)),
    fc.string({ unit: 'grapheme', maxLength: 20 }).filter((s) => !PRODUCT_ID_PATTERN.test(s)),
    fc.stringMatching(/^[A-Za-z0-9_-]{65,90}$/),
    fc.constantFrom('../x', 'a b', 'a{b}', 'ü', 'live ', ' live', 'LIVE\n', 'live\u0000'),
    notString,
  );
  const badUser = fc.oneof(
    fc.string({ maxLength: 140 }).filter((s) => !USER_ID.test(s)),
    fc.stringMatching(/^[A-Za-z0-9]{129,160}$/),
    fc.constantFrom('a b', 'a{b}', '}', 'ü', '', '\u0000'),
    notString,
  );
  const badQuantity = fc.oneof(
    fc.integer({ max: 0 }),
    fc.integer({ min: MAX_ORDER_QUANTITY + 1 }),
    fc.double().filter((d) => !(Number.isInteger(d) && d >= 1 && d <= MAX_ORDER_QUANTITY)),
    fc.constantFrom(1e30, -0, 2.5, 2 ** 53 + 2, -1),
    fc.string({ maxLength: 5 }),
    fc.constant(null),
    fc.boolean(),
    fc.array(fc.nat(), { maxLength: 2 }),
  );
  const unknownProduct = fc.stringMatching(/^[A-Za-z0-9_-]{1,40}$/).map((s) => `unknown-${s}`);

  type Case = { kind: string; body: string; headers?: Record<string, string>; expect: [number, string] };
  const bad400 = (kind: string, v: unknown): Case => ({
    kind,
    body: json(v),
    expect: [400, 'invalid_request'],
  });
  const withQuantity = (o: Record<string, unknown>, q: number | undefined) =>
    q === undefined ? o : { ...o, quantity: q };

  const cases: fc.Arbitrary<Case> = fc.oneof(
    fc
      .tuple(badProductId, goodUser, goodQuantity)
      .map(([p, u, q]) => bad400('productId', withQuantity({ productId: p, userId: u }, q))),
    fc
      .tuple(knownProduct, badUser, goodQuantity)
      .map(([p, u, q]) => bad400('userId', withQuantity({ productId: p, userId: u }, q))),
    fc
      .tuple(knownProduct, goodUser, badQuantity)
      .map(([p, u, q]) => bad400('quantity', { productId: p, userId: u, quantity: q })),
    fc
      .tuple(knownProduct, goodQuantity)
      .map(([p, q]) => bad400('no userId', withQuantity({ productId: p }, q))),
    fc.tuple(goodUser, goodQuantity).map(([u, q]) => bad400('no productId', withQuantity({ userId: u }, q))),
    fc
      .dictionary(fc.string({ maxLength: 10 }), fc.jsonValue({ maxDepth: 2 }), { maxKeys: 5 })
      .filter((o) => !('productId' in o && 'userId' in o))
      .map((o) => bad400('random object', o)),
    fc
      .jsonValue({ maxDepth: 2 })
      .filter((v) => v === null || typeof v !== 'object' || Array.isArray(v))
      .map((v) => bad400('not an object', v)),
    fc
      .string({ maxLength: 60 })
      .filter((s) => {
        try {
          JSON.parse(s);
          return false;
        } catch {
          return true;
        }
      })
      .map((s): Case => ({ kind: 'not JSON', body: s, expect: [400, 'invalid_request'] })),
    fc
      .tuple(
        knownProduct,
        goodUser,
        fc.oneof(fc.string({ maxLength: 20 }), fc.stringMatching(/^[a-z]{201,220}$/)),
      )
      // HTTP strips a header value's surrounding whitespace: what the server sees must be invalid.
      .filter(([, , k]) => !/^[A-Za-z0-9_.:@-]{1,200}$/.test(k.trim()) && /^[\x20-\x7e]*$/.test(k))
      .map(
        ([p, u, k]): Case => ({
          kind: 'bad Idempotency-Key',
          body: json({ productId: p, userId: u }),
          headers: { 'idempotency-key': k },
          expect: [400, 'invalid_request'],
        }),
      ),
    fc.tuple(unknownProduct, goodUser, goodQuantity).map(
      ([p, u, q]): Case => ({
        kind: 'unknown product',
        body: json(withQuantity({ productId: p, userId: u }, q)),
        expect: [404, 'unknown_product'],
      }),
    ),
  );

  it('>= 2,000 bad order bodies: never 5xx, never 202, the documented code, never a changed key', async () => {
    let sent = 0;
    const kinds = new Map<string, number>();
    await fc.assert(
      fc.asyncProperty(cases, async (c) => {
        const r = await call(api.url, 'POST', '/api/orders', c.body, c.headers ?? {});
        sent += 1;
        kinds.set(c.kind, (kinds.get(c.kind) ?? 0) + 1);
        assert.ok(r.status < 500, `5xx for ${c.kind}: ${c.body}`);
        assert.notEqual(r.status, 202, `accepted ${c.kind}: ${c.body}`);
        assertRefused(r, c.expect[0], c.expect[1], `${c.kind}: ${c.body.slice(0, 200)}`);
        if (sent % 500 === 0) await assertUnchanged(`after ${sent} generated bodies`);
      }),
      { numRuns: 2400 },
    );
    assert.ok(sent >= 2000, `sent ${sent}`);
    for (const kind of [
      'productId',
      'userId',
      'quantity',
      'not JSON',
      'unknown product',
      'bad Idempotency-Key',
    ]) {
      assert.ok((kinds.get(kind) ?? 0) >= 50, `too few ${kind} cases: ${JSON.stringify([...kinds])}`);
    }
    await assertUnchanged('after all generated bodies');
  });
});
