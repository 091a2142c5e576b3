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

import http from 'k6/http';
import {
  buy,
  commonThresholds,
  herdStages,
  loadConfig,
  maxDropped,
  plannedIterations,
  startSale,
  summaryTrendStats,
  toDuration,
  uniqueUserId,
  verifyInvariants,
  writeSummary,
} from './lib.js';

const cfg = loadConfig({ stock: 10000, shards: 8, rate: 1000, duration: '30s' });

// 409 and 429 are answers the contract promises, not failures: keep them out of
// http_req_failed so that metric only shows transport errors and 5xx.
http.setResponseCallback(http.expectedStatuses(202, 409, 429));

const stages = herdStages(cfg);

/** @type {import('k6/options').Options} */
export const options = {
  scenarios: {
    buyers: {
      executor: 'ramping-arrival-rate',
      startRate: 0,
      timeUnit: '1s',
      preAllocatedVUs: cfg.vus,
      maxVUs: cfg.maxVus,
      stages,
      exec: 'buyer',
    },
  },
  thresholds: {
    ...commonThresholds(cfg, cfg.stock),
    dropped_iterations: [`count<=${maxDropped(plannedIterations(stages))}`],
  },
  // teardown waits for the writer to drain before it checks anything.
  teardownTimeout: toDuration(cfg.drainTimeoutSec + 60),
  setupTimeout: toDuration(cfg.readyTimeoutSec + 60),
  summaryTrendStats,
};

export function setup() {
  return startSale(cfg, 'flash-sale');
}

/** @param {{ productId: string, runId: string }} data */
export function buyer(data) {
  buy(cfg, data.productId, uniqueUserId(data.runId));
}

/** @param {{ productId: string, runId: string }} data */
export function teardown(data) {
  verifyInvariants(cfg, data.productId, { total: cfg.stock });
}

/** @param {any} data */
export function handleSummary(data) {
  return writeSummary('flash-sale', data);
}
