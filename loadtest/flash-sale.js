// The flash sale itself: a sale opens and a herd of distinct buyers arrives at RATE per second
// (open model: arrivals do not wait for answers, as real users do not wait for each other).
// Demand exceeds STOCK by default, so the run covers both halves of a sale: the contended
// decrements while stock lasts and the sold-out answers after.
//
// Checkout: the sale has a short payment window (PAYMENT_TIMEOUT_SEC, default 5 s) and a share of
// the buyers (PAY_RATIO, default 0.7) pays as soon as its order is accepted; the others abandon it,
// their units come back on sale when the window closes and later buyers get them. After the herd,
// once every order is paid or expired, closing buyers buy and pay what is left: the sale ends with
// every unit paid. PAYMENT_TIMEOUT_SEC=0 runs the sale without payment (orders end confirmed).
//
// Every buyer follows the order protocol (lib.js answered()): answered 429 queued, it keeps its
// ticket and Idempotency-Key and comes back after retryAfterMs; a 409 ends it.
//
// Pass/fail: latency of accepted orders, no answer outside the contract (orders and payments), no
// more 202s than stock (without a payment window), the load actually offered (dropped
// iterations), and after the run, with the writer drained, the invariants on the server's own
// numbers (no oversell, nothing lost, conservation with returned units, every unit paid, Redis and
// Postgres reconciled).
//
//   k6 run -e BASE_URL=http://localhost:8080 -e ADMIN_TOKEN=... loadtest/flash-sale.js

import {
  buyAndMaybePay,
  closingBuyers,
  commonThresholds,
  droppedThreshold,
  envInt,
  envNumber,
  expectBuyerStatuses,
  herdSale,
  herdScenario,
  herdStages,
  loadConfig,
  runOptions,
  startSale,
  verifyInvariants,
  waitForDrain,
  writeSummary,
} from './lib.js';

const cfg = loadConfig({ stock: 10000, shards: 8, rate: 1000, duration: '30s' });
const paymentTimeoutSec = envInt('PAYMENT_TIMEOUT_SEC', 5, 0);
const payRatio = envNumber('PAY_RATIO', 0.7);
if (!(payRatio >= 0 && payRatio <= 1)) throw new Error(`PAY_RATIO must be within 0..1, got ${payRatio}`);
const checkout = paymentTimeoutSec > 0;

expectBuyerStatuses();

const stages = herdStages(cfg);

/** @type {import('k6/options').Options} */
export const options = {
  scenarios: { buyers: herdScenario(cfg, stages) },
  thresholds: {
    // With checkout, expired units are sold again: more 202s than stock is then no oversell.
    ...commonThresholds(cfg, checkout ? undefined : cfg.stock),
    dropped_iterations: droppedThreshold(stages),
    ...(checkout && { pay_unexpected: ['count==0'] }),
  },
  ...runOptions(cfg),
};

const sale = herdSale(cfg, 'flash-sale', { total: cfg.stock });

/** @returns {import('./lib.js').SaleData} */
export function setup() {
  return checkout ? startSale(cfg, 'flash-sale', { paymentTimeoutSec }) : sale.setup();
}

/** @param {import('./lib.js').SaleData} data */
export function buyer(data) {
  if (checkout) buyAndMaybePay(cfg, data, payRatio);
  else sale.buyer(data);
}

/** @param {import('./lib.js').SaleData} data */
export function teardown(data) {
  if (!checkout) return sale.teardown(data);
  // Every order paid or expired first; then the closing buyers take (and pay) what came back.
  waitForDrain(cfg, data.productId, true);
  const bought = closingBuyers(cfg, data, cfg.stock);
  console.log(`closing buyers bought and paid ${bought} units that came back on sale`);
  verifyInvariants(cfg, data.productId, { total: cfg.stock, payment: true, allPaid: true });
}

/** @param {any} data */
export function handleSummary(data) {
  return writeSummary('flash-sale', data);
}
