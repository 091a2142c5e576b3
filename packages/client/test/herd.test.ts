// The herd the client is for: 300 buyers on a sale that opens 5 s after they arrive, every one
// following the protocol through placeOrder. Every unit is sold, every other buyer ends sold_out,
// nobody is left waiting, and the units sold are the rows written (no oversell, nothing lost).
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { call, createSale, drained } from '../../../harness/service.ts';
import { useService } from '../../../test/support/suite.ts';
import { FlashsaleClient, type PlaceOrderResult, type Progress } from '../src/index.ts';

const BUYERS = 300;
const STOCK = 120;
const OPENS_IN_MS = 5000;

// Admission control on and tight: the herd meets busy and queued answers, not only 202s.
const { infra, svc } = useService({
  ADMISSION_LIMIT: '16',
  ADMISSION_MIN_LIMIT: '8',
  ADMISSION_MAX_LIMIT: '64',
});

describe('a herd of buyers on the client', () => {
  it(`${BUYERS} buyers, a sale opening ${OPENS_IN_MS / 1000} s later: every unit sold, everyone else sold out`, async () => {
    const startsAt = new Date(Date.now() + OPENS_IN_MS).toISOString();
    await createSale(svc.url, 'herd', { stock: STOCK, shards: 4, startsAt });
    const phases = new Map<string, number>();
    const count = (p: Progress) => {
      const key = p.phase === 'retrying' ? `retrying:${p.reason}` : p.phase;
      phases.set(key, (phases.get(key) ?? 0) + 1);
    };
    const buyers = Array.from({ length: BUYERS }, (_, i) =>
      new FlashsaleClient({ baseUrl: svc.url, userId: `buyer-${i}` }).placeOrder(
        { productId: 'herd' },
        { onProgress: count },
      ),
    );
    const results: PlaceOrderResult[] = await Promise.all(buyers);
    const outcomes = new Map<string, number>();
    for (const r of results) outcomes.set(r.outcome, (outcomes.get(r.outcome) ?? 0) + 1);
    console.log(
      `outcomes ${JSON.stringify(Object.fromEntries(outcomes))}; progress ${JSON.stringify(Object.fromEntries(phases))}`,
    );
    assert.deepEqual(Object.fromEntries(outcomes), { ordered: STOCK, sold_out: BUYERS - STOCK });
    assert.ok((phases.get('waiting_for_start') ?? 0) >= BUYERS, 'every buyer waited for the opening');
    const ids = new Set(results.map((r) => r.outcome === 'ordered' && r.order.orderId).filter(Boolean));
    assert.equal(ids.size, STOCK, 'one order per unit');
    const state = await drained(svc.url, 'herd');
    assert.deepEqual([state.sold, state.available, state.total], [STOCK, 0, STOCK]);
    assert.equal(await infra.rows('herd'), STOCK);
    const product = await call(svc.url, 'GET', '/api/products/herd');
    assert.equal(product.body.soldOut, true);
  });
});
