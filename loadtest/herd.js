// The opening second of a flash sale: BUYERS distinct buyers (default 3,000) send their first order
// within ARRIVAL (default 1s) for a small STOCK (default 300), each following the order protocol
// (lib.js answered()): answered 429 queued, it keeps its ticket and Idempotency-Key and comes back
// after retryAfterMs, until its 202 or 409 (or it gives up, QUEUE_GIVE_UP s after its first request).
//
// STREAM_SHARE (default 0.5) of the buyers ask for a stream (Accept: text/event-stream, DESIGN.md
// §4): one request, answered at once or held until its result event; k6 gets the whole stream when it
// ends, and its result is read as the JSON answer it stands for. The others poll.
//
// One VU drives every buyer at once (http.asyncRequest and timers), so the run itself knows each
// buyer's first-request time and whether it got a unit, and measures first come, first served: the
// share of the units that went to the first 1.05 x STOCK buyers by first-request time
// (herd_fairness, bounded loosely by MIN_FAIRNESS, default 0.8: a loaded CI machine bends timing;
// the latency and fairness targets belong to the bench's herd phase).
//
// Pass/fail (correctness only, no latency bound): no answer outside the contract, exactly STOCK 202s (never more, none lost), nobody gave
// up, herd_fairness, and after the writer drained the invariants (no oversell, every 202 one row,
// every unit sold, Redis and Postgres reconciled).
//
//   k6 run -e BASE_URL=http://localhost:8080 -e ADMIN_TOKEN=... loadtest/herd.js

import http from 'k6/http';
import { Counter, Gauge, Trend } from 'k6/metrics';
import { setTimeout } from 'k6/timers';
import {
  answered,
  commonThresholds,
  envInt,
  envNumber,
  envString,
  expectBuyerStatuses,
  loadConfig,
  metricValues,
  ORDER_TAGS,
  parseDuration,
  purchase,
  runOptions,
  sending,
  startSale,
  toDuration,
  verifyInvariants,
  writeSummary,
} from './lib.js';

const cfg = loadConfig({ stock: 300, shards: 4, rate: 3000, duration: '1s' });
const buyers = envInt('BUYERS', 3000);
const arrivalMs = parseDuration(envString('ARRIVAL', '1s')) * 1000;
const minFairness = envNumber('MIN_FAIRNESS', 0.8);
const streamShare = envNumber('STREAM_SHARE', 0.5);
/** The first buyers by first-request time who should get the units: 5 % of slack for timing. */
const FAIR_FACTOR = 1.05;

expectBuyerStatuses();

const fairness = new Gauge('herd_fairness');
const requestsPerBuyer = new Trend('herd_requests_per_buyer');
/** ms from the first request to the last 202. */
const sellOutMs = new Gauge('herd_sell_out_ms');
/** ms from the last 202 until the last buyer had its 409. */
const toldMs = new Gauge('herd_sold_out_told_ms');
const buyersDone = new Counter('herd_buyers');

// Correctness only: the latency of a herd's answers is the bench's herd phase's to judge.
const { 'http_req_duration{status:202}': _latency, ...correctness } = commonThresholds(cfg, cfg.stock);

/** @type {import('k6/options').Options} */
export const options = {
  scenarios: {
    herd: {
      executor: 'per-vu-iterations',
      vus: 1,
      iterations: 1,
      maxDuration: toDuration(arrivalMs / 1000 + cfg.queueGiveUpSec + 30),
      exec: 'herd',
    },
  },
  thresholds: {
    ...correctness,
    // Every unit sold, and the client saw each 202: none lost to an error or a timeout.
    accepted: [`count==${cfg.stock}`],
    herd_buyers: [`count==${buyers}`],
    gave_up: ['count==0'],
    herd_fairness: [`value>=${minFairness}`],
  },
  ...runOptions(cfg),
};

/** @returns {import('./lib.js').SaleData} */
export function setup() {
  return startSale(cfg, 'herd');
}

/**
 * @param {number} ms
 * @returns {Promise<void>}
 */
function wait(ms) {
  return new Promise((resolve) => setTimeout(resolve, Math.max(0, ms)));
}

/** @typedef {{ firstAt: number, lastAt: number, got: boolean, requests: number }} Outcome */

/**
 * One buyer: its first order at `at` (Date.now() ms), then the protocol until its order is answered.
 * @param {import('./lib.js').SaleData} data
 * @param {number} i
 * @param {number} at
 * @returns {Promise<Outcome>}
 */
async function buyer(data, i, at) {
  const p = purchase(cfg, data.productId, `${data.runId}-herd-${i}`);
  // Every 1/STREAM_SHARE-th buyer streams, spread evenly over the arrivals.
  const streams = Math.floor((i + 1) * streamShare) > Math.floor(i * streamShare);
  if (streams) p.headers.Accept = 'text/event-stream';
  await wait(at - Date.now());
  for (;;) {
    sending(p);
    const res = await http.asyncRequest('POST', `${cfg.baseUrl}/api/orders`, p.body, {
      headers: p.headers,
      tags: ORDER_TAGS,
      // A held stream lasts until the buyer's turn or the sell-out.
      timeout: toDuration(cfg.queueGiveUpSec + 30),
    });
    const { outcome, waitSec } = answered(cfg, p, streamed(res));
    if (waitSec === undefined) {
      return { firstAt: p.firstAt, lastAt: Date.now(), got: outcome === 'accepted', requests: p.requests };
    }
    await wait(waitSec * 1000);
  }
}

/**
 * A held stream as the JSON answer its result event stands for (DESIGN.md §4); any other answer as is.
 * @param {import('k6/http').RefinedResponse<any>} res
 * @returns {import('k6/http').RefinedResponse<any>}
 */
function streamed(res) {
  if (!String(res.headers['Content-Type'] ?? '').startsWith('text/event-stream')) return res;
  const events = String(res.body ?? '').split('\n\n');
  const result = events.find((e) => e.startsWith('event: result\n'));
  const data = result?.split('\n').find((line) => line.startsWith('data: '));
  if (data === undefined) return res;
  const { status, body } = JSON.parse(data.slice('data: '.length));
  const { headers, timings, error } = res;
  return /** @type {any} */ ({
    status,
    body: JSON.stringify(body),
    json: () => body,
    headers,
    timings,
    error,
  });
}

/**
 * Fairness, sell-out and the sold-out news from every buyer's outcome.
 * @param {Outcome[]} all
 */
function measure(all) {
  const byFirst = [...all].sort((a, b) => a.firstAt - b.firstAt);
  const early = byFirst.slice(0, Math.ceil(FAIR_FACTOR * cfg.stock));
  fairness.add(early.filter((o) => o.got).length / cfg.stock);
  for (const o of all) {
    requestsPerBuyer.add(o.requests);
    buyersDone.add(1);
  }
  const winners = all.filter((o) => o.got);
  const firstAt = byFirst[0]?.firstAt ?? 0;
  const lastSale = Math.max(firstAt, ...winners.map((o) => o.lastAt));
  sellOutMs.add(lastSale - firstAt);
  toldMs.add(Math.max(0, ...all.filter((o) => !o.got).map((o) => o.lastAt - lastSale)));
}

/**
 * Every buyer, first requests spread evenly over ARRIVAL.
 * @param {import('./lib.js').SaleData} data
 */
export async function herd(data) {
  const start = Date.now() + 100;
  const running = [];
  for (let i = 0; i < buyers; i++) running.push(buyer(data, i, start + (i * arrivalMs) / buyers));
  measure(await Promise.all(running));
}

/** @param {import('./lib.js').SaleData} data */
export function teardown(data) {
  verifyInvariants(cfg, data.productId, { total: cfg.stock, soldOut: true });
}

/** @param {any} data */
export function handleSummary(data) {
  const value = (/** @type {string} */ name) => metricValues(data, name)?.value;
  const perBuyer = metricValues(data, 'herd_requests_per_buyer');
  const ms = (/** @type {number | undefined} */ v) => (v === undefined ? '-' : `${v.toFixed(0)}ms`);
  return writeSummary('herd', data, {
    lines: [
      '',
      `  herd (${buyers} buyers within ${arrivalMs} ms for ${cfg.stock} units)`,
      `    fairness (units to the first ${FAIR_FACTOR} x stock buyers by first request) ${value('herd_fairness')?.toFixed(3) ?? '-'}`,
      `    requests per buyer: median ${perBuyer?.med ?? '-'}  p99 ${perBuyer?.['p(99)'] ?? '-'}  max ${perBuyer?.max ?? '-'}`,
      `    sell-out ${ms(value('herd_sell_out_ms'))} after the first request; every waiting buyer told sold out ${ms(value('herd_sold_out_told_ms'))} later`,
    ],
  });
}
