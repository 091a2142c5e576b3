// What a flash sale mostly is: a few units gone in a blink, then a storm of buyers who are
// all told "sold out". Two phases:
//   rush   RUSH_RATE/s for RUSH_DURATION against a small STOCK: the tightest race for the last
//          units, where an oversell would show first.
//   storm  RATE/s after the stock is gone. Each API process remembers "sold out" and answers
//          without touching Redis, so these answers must be fast and must all be sold_out
//          (not queued, not busy, not errors).
// At the end every unit must be sold: a sold_out answer while a shard still held stock would
// leave units behind, which is a lost sale.
//
//   k6 run -e BASE_URL=http://localhost:8080 -e ADMIN_TOKEN=... loadtest/sold-out-storm.js

import { Rate } from 'k6/metrics';
import {
  buyAsNewUser,
  commonThresholds,
  droppedThreshold,
  envInt,
  envNumber,
  envString,
  expectBuyerStatuses,
  herdSale,
  herdScenario,
  herdStages,
  loadConfig,
  metricValues,
  parseDuration,
  runOptions,
  toDuration,
  writeSummary,
} from './lib.js';

const cfg = loadConfig({ stock: 100, shards: 4, rate: 2000, duration: '30s' });
const rushRate = envInt('RUSH_RATE', 500);
const rushDuration = envString('RUSH_DURATION', '10s');
const soldOutP95 = envNumber('SOLDOUT_P95_MS', 50);
const soldOutP99 = envNumber('SOLDOUT_P99_MS', 100);
const minSoldOutRate = envNumber('MIN_SOLD_OUT_RATE', 0.99);

expectBuyerStatuses();

/** Per storm answer: was it 409 sold_out? */
const stormSoldOut = new Rate('storm_sold_out');

const stormStages = herdStages(cfg);

/** @type {import('k6/options').Options} */
export const options = {
  scenarios: {
    rush: {
      executor: 'constant-arrival-rate',
      rate: rushRate,
      timeUnit: '1s',
      duration: rushDuration,
      preAllocatedVUs: Math.max(20, Math.ceil(rushRate / 10)),
      maxVUs: Math.max(100, rushRate),
      exec: 'buyer',
    },
    storm: {
      ...herdScenario(cfg, stormStages, 'stormBuyer'),
      // A 2 s gap lets the rush's last answers land, so the storm meets a settled sold-out state.
      startTime: toDuration(parseDuration(rushDuration) + 2),
    },
  },
  thresholds: {
    ...commonThresholds(cfg, cfg.stock),
    // The sold-out fast path: no lock, no Redis round trip.
    'http_req_duration{scenario:storm,status:409}': [`p(95)<${soldOutP95}`, `p(99)<${soldOutP99}`],
    // After the stock is gone the answer is sold_out, not queued, not busy and not an error.
    storm_sold_out: [`rate>=${minSoldOutRate}`],
    'dropped_iterations{scenario:storm}': droppedThreshold(stormStages),
  },
  ...runOptions(cfg),
};

const sale = herdSale(cfg, 'storm', { total: cfg.stock, soldOut: true });
export const buyer = sale.buyer;
export const teardown = sale.teardown;

export function setup() {
  if (rushRate * parseDuration(rushDuration) < 2 * cfg.stock) {
    console.warn(
      'RUSH_RATE x RUSH_DURATION is under twice STOCK: the rush may not sell out before the storm',
    );
  }
  return sale.setup();
}

/** @param {import('./lib.js').SaleData} data */
export function stormBuyer(data) {
  const { outcome } = buyAsNewUser(cfg, data);
  stormSoldOut.add(outcome === 'sold_out');
}

/** @param {any} data */
export function handleSummary(data) {
  const storm = metricValues(data, 'http_req_duration{scenario:storm,status:409}');
  const rate = metricValues(data, 'storm_sold_out')?.rate;
  const fmt = (/** @type {number | undefined} */ ms) => (ms === undefined ? '-' : `${ms.toFixed(1)}ms`);
  return writeSummary('sold-out-storm', data, {
    lines: [
      '',
      '  storm (after sell-out)',
      `    sold_out answers ${rate === undefined ? '-' : `${(rate * 100).toFixed(2)}%`}   409 latency p95 ${fmt(storm?.['p(95)'])}  p99 ${fmt(storm?.['p(99)'])}`,
    ],
  });
}
