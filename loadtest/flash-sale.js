// The flash sale itself: a sale opens and a herd of distinct buyers arrives at RATE per second
// (open model: arrivals do not wait for answers, as real users do not wait for each other).
// Demand exceeds STOCK by default, so the run covers both halves of a sale: the contended
// decrements while stock lasts and the sold-out answers after.
//
// Pass/fail: latency of accepted orders, no answer outside the contract, no more 202s than
// stock, the load actually offered (dropped iterations), and after the run, with the writer
// drained, the invariants on the server's own numbers (no oversell, nothing lost, conservation,
// Redis and Postgres reconciled).
//
//   k6 run -e BASE_URL=http://localhost:8080 -e ADMIN_TOKEN=... loadtest/flash-sale.js

import {
  commonThresholds,
  droppedThreshold,
  expectBuyerStatuses,
  herdSale,
  herdScenario,
  herdStages,
  loadConfig,
  runOptions,
  writeSummary,
} from './lib.js';

const cfg = loadConfig({ stock: 10000, shards: 8, rate: 1000, duration: '30s' });

expectBuyerStatuses();

const stages = herdStages(cfg);

/** @type {import('k6/options').Options} */
export const options = {
  scenarios: { buyers: herdScenario(cfg, stages) },
  thresholds: {
    ...commonThresholds(cfg, cfg.stock),
    dropped_iterations: droppedThreshold(stages),
  },
  ...runOptions(cfg),
};

const sale = herdSale(cfg, 'flash-sale', { total: cfg.stock });
export const setup = sale.setup;
export const buyer = sale.buyer;
export const teardown = sale.teardown;

/** @param {any} data */
export function handleSummary(data) {
  return writeSummary('flash-sale', data);
}
