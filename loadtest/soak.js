// A long run at a steady rate, to catch what only time reveals: latency creeping up (leaks,
// growing Redis keys or queues, GC pressure), reservations the writer never catches up with,
// lock leases that drift. Buyers follow the order protocol (lib.js answered(): a 429 queued comes
// back with its ticket). Stock is restocked every RESTOCK_EVERY with half of what buyers take in that time, so every cycle sells out and is restocked: the sold-out flag is set and
// cleared by the restock event over and over, for the whole run.
//
// Latency drift is judged two ways:
//   - absolute: p99 of accepted orders in the first and in the last PHASE_WINDOW, each under
//     its bound (soak_accepted_latency{phase:early|late});
//   - relative: a single probe VU sends orders at a steady pace for the whole run, learns its
//     p99 over the first window, and in the last window counts answers slower than
//     MAX_DRIFT x that p99. At most 1 % may be (threshold drift_exceeded rate<0.01), which is
//     the same as "late p99 <= MAX_DRIFT x early p99". k6 thresholds cannot compare two metrics,
//     and a single VU sees every probe sample, so it can.
//
//   k6 run -e BASE_URL=http://localhost:8080 -e ADMIN_TOKEN=... -e DURATION=2h loadtest/soak.js

import { check, sleep } from 'k6';
import exec from 'k6/execution';
import { Counter, Gauge, Rate, Trend } from 'k6/metrics';
import {
  admin,
  buyAsNewUser,
  commonThresholds,
  envInt,
  envNumber,
  envString,
  expectBuyerStatuses,
  loadConfig,
  maxDropped,
  metricValues,
  parseDuration,
  runOptions,
  startSale,
  toDuration,
  verifyInvariants,
  writeSummary,
} from './lib.js';

/** @typedef {import('./lib.js').SaleData} SaleData */

// Default stock: one interval of demand at the chosen rate.
const rate = envInt('RATE', 100);
const cfg = loadConfig({ stock: rate * 60, shards: 8, rate, duration: '30m' });
const restockEvery = envString('RESTOCK_EVERY', '60s');
const restockEverySec = parseDuration(restockEvery);
const restockDelta = envInt('RESTOCK', Math.ceil((cfg.rate * restockEverySec) / 2));
const windowSec = envNumber('PHASE_WINDOW', Math.min(300, cfg.durationSec / 4));
const lateP99Ms = envNumber('LATE_P99_MS', cfg.p99Ms);
const maxDrift = envNumber('MAX_DRIFT', 1.5);
const probeRate = envNumber('PROBE_RATE', 5);
const minBaseline = envInt('MIN_BASELINE', 50);

// Restocks start one interval in and run for the rest of the plateau: one every T over D - T
// seconds. k6 v2's arrival-rate executor also starts one right at the end of its duration when that
// is a whole number of intervals (10s at one per 5s: t = 0, 5 and 10), so at most floor((D - T) / T) + 1.
const restockSpanSec = cfg.durationSec - restockEverySec;
const maxRestocks = restockSpanSec > 0 ? Math.floor(restockSpanSec / restockEverySec) + 1 : 0;
const maxUnits = cfg.stock + restockDelta * maxRestocks;

expectBuyerStatuses();

const acceptedByPhase = new Trend('soak_accepted_latency', true);
const driftExceeded = new Rate('drift_exceeded');
const probeBaselineP99 = new Gauge('probe_baseline_p99');
const restocks = new Counter('restocks');
const restockOk = new Rate('restock_ok');

/** @type {import('k6/options').Options['scenarios']} */
const scenarios = {
  buyers: {
    executor: 'constant-arrival-rate',
    rate: cfg.rate,
    timeUnit: '1s',
    duration: cfg.duration,
    preAllocatedVUs: cfg.vus,
    maxVUs: cfg.maxVus,
    exec: 'buyer',
  },
  probe: {
    executor: 'constant-vus',
    vus: 1,
    duration: cfg.duration,
    exec: 'probe',
  },
};
if (maxRestocks > 0) {
  scenarios.restock = {
    executor: 'constant-arrival-rate',
    rate: 1,
    timeUnit: restockEvery,
    startTime: restockEvery,
    duration: toDuration(restockSpanSec),
    preAllocatedVUs: 1,
    maxVUs: 1,
    exec: 'restock',
  };
}

/** @type {import('k6/options').Options} */
export const options = {
  scenarios,
  thresholds: {
    ...commonThresholds(cfg, maxUnits),
    'soak_accepted_latency{phase:early}': [`p(99)<${cfg.p99Ms}`],
    'soak_accepted_latency{phase:late}': [`p(99)<${lateP99Ms}`],
    drift_exceeded: ['rate<0.01'],
    restock_ok: ['rate==1'],
    'dropped_iterations{scenario:buyers}': [`count<=${maxDropped(cfg.rate * cfg.durationSec)}`],
  },
  ...runOptions(cfg),
};

/**
 * Which window of the run this is in. Buyers and probe both start at 0, so their clocks agree.
 * @returns {'early' | 'mid' | 'late'}
 */
function phaseNow() {
  const elapsedSec = (Date.now() - exec.scenario.startTime) / 1000;
  if (elapsedSec < windowSec) return 'early';
  if (elapsedSec >= cfg.durationSec - windowSec) return 'late';
  return 'mid';
}

export function setup() {
  if (windowSec * 2 > cfg.durationSec) throw new Error('PHASE_WINDOW must be at most half of DURATION');
  return startSale(cfg, 'soak');
}

/** @param {SaleData} data */
export function buyer(data) {
  const { outcome, res } = buyAsNewUser(cfg, data);
  if (outcome === 'accepted') acceptedByPhase.add(res.timings.duration, { phase: phaseNow() });
}

// The probe VU's memory: 202 latencies of the first window, then their p99.
/** @type {number[]} */
const baseline = [];
/** @type {number | null} */
let baselineP99 = null;
let baselineReported = false;

/** @param {SaleData} data */
export function probe(data) {
  const started = Date.now();
  const phase = phaseNow();
  const { outcome, res } = buyAsNewUser(cfg, data);
  if (outcome === 'accepted') {
    if (phase === 'early') {
      baseline.push(res.timings.duration);
    } else if (phase === 'late') {
      if (!baselineReported) {
        baselineReported = true;
        if (baseline.length >= minBaseline) {
          const sorted = [...baseline].sort((a, b) => a - b);
          baselineP99 = sorted[Math.min(sorted.length - 1, Math.ceil(sorted.length * 0.99) - 1)] ?? null;
          if (baselineP99 !== null) probeBaselineP99.add(baselineP99);
        } else {
          console.warn(
            `probe saw only ${baseline.length} accepted orders in the first window (< MIN_BASELINE ${minBaseline}): ` +
              'drift not judged; raise PROBE_RATE or PHASE_WINDOW',
          );
        }
      }
      if (baselineP99 !== null) driftExceeded.add(res.timings.duration > maxDrift * baselineP99);
    }
  }
  // Closed loop at a steady pace: the probe must not add load that grows with latency.
  const rest = 1 / probeRate - (Date.now() - started) / 1000;
  if (rest > 0) sleep(rest);
}

/** @param {SaleData} data */
export function restock(data) {
  const res = admin(
    cfg,
    'POST',
    `/admin/products/${data.productId}/restock`,
    { delta: restockDelta },
    'POST /admin/products/:id/restock',
  );
  const ok = check(res, { 'restock: 200': (r) => r.status === 200 });
  restockOk.add(ok);
  restocks.add(1);
  if (!ok) console.warn(`restock answered ${res.status}: ${res.text.slice(0, 300)}`);
}

/** @param {SaleData} data */
export function teardown(data) {
  verifyInvariants(cfg, data.productId, {
    // Whole restocks only, and no more than were scheduled (one may have answered late).
    totalOk: (total) => {
      const added = total - cfg.stock;
      return added >= 0 && added % restockDelta === 0 && added / restockDelta <= maxRestocks;
    },
  });
}

/** @param {any} data */
export function handleSummary(data) {
  const early = metricValues(data, 'soak_accepted_latency{phase:early}')?.['p(99)'];
  const late = metricValues(data, 'soak_accepted_latency{phase:late}')?.['p(99)'];
  const drift = early && late ? late / early : undefined;
  const base = metricValues(data, 'probe_baseline_p99')?.value;
  const exceeded = metricValues(data, 'drift_exceeded')?.rate;
  const fmt = (/** @type {number | undefined} */ ms) => (ms === undefined ? '-' : `${ms.toFixed(1)}ms`);
  return writeSummary('soak', data, {
    lines: [
      '',
      `  drift (first vs last ${Math.round(windowSec)}s)`,
      `    p99 of 202s: early ${fmt(early)}  late ${fmt(late)}  ratio ${drift === undefined ? '-' : drift.toFixed(2)} (MAX_DRIFT ${maxDrift})`,
      `    probe: baseline p99 ${fmt(base)}; late answers slower than ${maxDrift}x baseline: ${exceeded === undefined ? '-' : `${(exceeded * 100).toFixed(2)}%`} (must stay < 1%)`,
      `    restocks ${metricValues(data, 'restocks')?.count ?? 0} x ${restockDelta}`,
    ],
    report: { drift: { earlyP99: early ?? null, lateP99: late ?? null, ratio: drift ?? null, maxDrift } },
  });
}
