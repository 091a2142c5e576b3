// The herd of flash-sale.js while an operator reshards the product every few seconds to a
// random shard count. Resharding takes the locks of every shard it touches, moves the stock to
// a new generation of keys and announces it over pub/sub, all while buyers hold and wait for
// the same locks (buyers told 429 queued come back with their ticket, as in flash-sale.js). The run
// checks that this never creates or destroys a unit: live, the available stock reported after each
// reshard never grows (nothing restocks here); at the end, conservation and the reconcile hold across
// every generation.
//
//   k6 run -e BASE_URL=http://localhost:8080 -e ADMIN_TOKEN=... loadtest/reshard-under-load.js

import { check } from 'k6';
import { Counter, Rate, Trend } from 'k6/metrics';
import {
  admin,
  commonThresholds,
  droppedThreshold,
  envInt,
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

// Stock a bit under the plateau's demand: the sale sells out near the end, so most reshards
// move live stock and the last few reshard an empty product.
const cfg = loadConfig({ stock: 25000, shards: 8, rate: 500, duration: '60s' });
const reshardEverySec = envInt('RESHARD_EVERY', 3);
const maxShards = envInt('MAX_SHARDS', 16);

expectBuyerStatuses();

const reshards = new Counter('reshards');
const reshardOk = new Rate('reshard_ok');
const reshardDuration = new Trend('reshard_duration', true);

const stages = herdStages(cfg);
const herdSec = stages.reduce((sum, stage) => sum + parseDuration(stage.duration), 0);

/** @type {import('k6/options').Options} */
export const options = {
  scenarios: {
    buyers: herdScenario(cfg, stages),
    // One VU at most: reshards never overlap each other, only the buyers. A reshard slower
    // than the interval shows up as a dropped admin iteration, not as two concurrent reshards.
    admin: {
      executor: 'constant-arrival-rate',
      rate: 1,
      timeUnit: `${reshardEverySec}s`,
      duration: toDuration(herdSec),
      preAllocatedVUs: 1,
      maxVUs: 1,
      exec: 'reshard',
    },
  },
  thresholds: {
    ...commonThresholds(cfg, cfg.stock),
    'dropped_iterations{scenario:buyers}': droppedThreshold(stages),
    // Every reshard under load answers 200 with the requested count, a newer generation and
    // no more stock than before.
    reshard_ok: ['rate==1'],
    reshard_duration: [`p(95)<${envInt('RESHARD_P95_MS', 2000)}`],
  },
  ...runOptions(cfg),
};

const sale = herdSale(cfg, 'reshard', { total: cfg.stock });
export const setup = sale.setup;
export const buyer = sale.buyer;
export const teardown = sale.teardown;

// State of the single admin VU across its iterations.
let lastGeneration = -1;
let lastAvailable = Number.POSITIVE_INFINITY;

/** @param {import('./lib.js').SaleData} data */
export function reshard(data) {
  const shards = 1 + Math.floor(Math.random() * maxShards);
  const started = Date.now();
  const res = admin(
    cfg,
    'POST',
    `/admin/products/${data.productId}/reshard`,
    { shards },
    'POST /admin/products/:id/reshard',
  );
  reshardDuration.add(Date.now() - started);
  const body = res.body ?? {};
  const ok = check(body, {
    'reshard: 200': () => res.status === 200,
    'reshard: requested shard count': (b) => b.shards === shards,
    'reshard: generation increases': (b) => typeof b.generation === 'number' && b.generation > lastGeneration,
    // Buyers only take stock away while this runs, so available may only shrink.
    'reshard: creates no stock (available never grows, never exceeds STOCK)': (b) =>
      typeof b.available === 'number' &&
      b.available >= 0 &&
      b.available <= Math.min(lastAvailable, cfg.stock),
  });
  reshardOk.add(ok);
  reshards.add(1);
  if (!ok) console.warn(`reshard to ${shards} answered ${res.status}: ${res.text.slice(0, 300)}`);
  if (typeof body.generation === 'number') lastGeneration = body.generation;
  if (typeof body.available === 'number') lastAvailable = body.available;
}

/** @param {any} data */
export function handleSummary(data) {
  const count = metricValues(data, 'reshards')?.count ?? 0;
  const p95 = metricValues(data, 'reshard_duration')?.['p(95)'];
  return writeSummary('reshard-under-load', data, {
    lines: [
      '',
      '  resharding',
      `    reshards ${count}   p95 ${p95 === undefined ? '-' : `${p95.toFixed(0)}ms`}`,
    ],
  });
}
