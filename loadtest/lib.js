// Shared pieces of the k6 scenarios: configuration from __ENV, the buyer request and its
// classification against the HTTP contract (DESIGN.md §4), the admin calls, the end-of-test
// invariant check (DESIGN.md §5) and the summary writer. Every scenario imports from here so a
// contract change is made once.
//
// Plain k6 JavaScript (ES modules, no bundler). Type-checked with `tsc -p loadtest/tsconfig.json`
// against @types/k6 through the JSDoc annotations.

import { check, fail, sleep } from 'k6';
import exec from 'k6/execution';
import http from 'k6/http';
import { Counter, Gauge, Rate, Trend } from 'k6/metrics';
import { classifyAnswer, isPlace, parseDuration } from './contract.js';

export { parseDuration };

// ---------------------------------------------------------------------------------------------
// Configuration

/**
 * @typedef {object} Defaults  per-scenario defaults for the common variables
 * @property {number} stock
 * @property {number} shards
 * @property {number} rate      arrivals per second at the plateau
 * @property {string} duration  k6 duration string ("30s", "2m", "1h30m")
 */

/**
 * @typedef {object} Config
 * @property {string} baseUrl
 * @property {string} adminToken
 * @property {number} stock
 * @property {number} shards
 * @property {number} rate
 * @property {string} duration
 * @property {number} durationSec
 * @property {string} ramp
 * @property {number} rampSec
 * @property {string} productId          empty: setup() makes a unique one
 * @property {number | undefined} perUserLimit
 * @property {boolean} idempotency
 * @property {number} retries            retries of a 429 busy or rate_limited per buyer
 * @property {number} queueGiveUpSec     a queued buyer gives up this long after its first request
 * @property {number} vus                pre-allocated VUs of the arrival-rate executors
 * @property {number} maxVus
 * @property {number} p95Ms
 * @property {number} p99Ms
 * @property {number} drainTimeoutSec
 * @property {number} readyTimeoutSec
 */

/**
 * A variable of the environment (`k6 run -e NAME=value` or the shell), or the fallback.
 * @param {string} name
 * @param {string} fallback
 * @returns {string}
 */
export function envString(name, fallback) {
  const value = __ENV[name];
  return value === undefined || value === '' ? fallback : value;
}

/**
 * A positive integer from the environment; a typo fails the run at start, naming the variable,
 * instead of silently load-testing with NaN.
 * @param {string} name
 * @param {number} fallback
 * @param {number} [min]
 * @returns {number}
 */
export function envInt(name, fallback, min = 1) {
  const raw = envString(name, String(fallback));
  const value = Number(raw);
  if (!Number.isInteger(value) || value < min) {
    throw new Error(`${name} must be an integer >= ${min}, got "${raw}"`);
  }
  return value;
}

/**
 * A positive number (fractions allowed) from the environment.
 * @param {string} name
 * @param {number} fallback
 * @returns {number}
 */
export function envNumber(name, fallback) {
  const raw = envString(name, String(fallback));
  const value = Number(raw);
  if (!Number.isFinite(value) || value <= 0) throw new Error(`${name} must be a number > 0, got "${raw}"`);
  return value;
}

/**
 * A boolean flag: 1/true/yes/on or 0/false/no/off.
 * @param {string} name
 * @param {boolean} fallback
 * @returns {boolean}
 */
export function envBool(name, fallback) {
  const raw = envString(name, fallback ? '1' : '0').toLowerCase();
  if (['1', 'true', 'yes', 'on'].includes(raw)) return true;
  if (['0', 'false', 'no', 'off'].includes(raw)) return false;
  throw new Error(`${name} must be 1/0 (or true/false), got "${raw}"`);
}

/**
 * A duration given in seconds, in k6's notation.
 * @param {number} sec
 * @returns {string}
 */
export function toDuration(sec) {
  return `${Math.max(1, Math.round(sec))}s`;
}

/**
 * Reads the variables every scenario shares; `defaults` are the scenario's own.
 * @param {Defaults} defaults
 * @returns {Config}
 */
export function loadConfig(defaults) {
  const rate = envInt('RATE', defaults.rate);
  const duration = envString('DURATION', defaults.duration);
  const ramp = envString('RAMP', '5s');
  const limit = envString('PER_USER_LIMIT', '');
  const productId = envString('PRODUCT_ID', '');
  if (productId !== '' && !/^[A-Za-z0-9_-]{1,64}$/.test(productId)) {
    throw new Error(`PRODUCT_ID must match ^[A-Za-z0-9_-]{1,64}$, got "${productId}"`);
  }
  return {
    baseUrl: envString('BASE_URL', 'http://localhost:3000').replace(/\/+$/, ''),
    adminToken: envString('ADMIN_TOKEN', ''),
    stock: envInt('STOCK', defaults.stock),
    shards: envInt('SHARDS', defaults.shards),
    rate,
    duration,
    durationSec: parseDuration(duration),
    ramp,
    rampSec: parseDuration(ramp),
    productId,
    perUserLimit: limit === '' ? undefined : envInt('PER_USER_LIMIT', 1),
    idempotency: envBool('IDEMPOTENCY', true),
    retries: envInt('RETRIES', 3, 0),
    queueGiveUpSec: envInt('QUEUE_GIVE_UP', 60),
    // Open model: VUs needed = arrival rate x latency. Pre-allocate for ~100 ms, allow ~1 s.
    vus: envInt('VUS', Math.max(20, Math.ceil(rate / 10))),
    maxVus: envInt('MAX_VUS', Math.max(100, rate)),
    p95Ms: envNumber('P95_MS', 250),
    p99Ms: envNumber('P99_MS', 500),
    drainTimeoutSec: envInt('DRAIN_TIMEOUT', 120),
    readyTimeoutSec: envInt('READY_TIMEOUT', 60),
  };
}

/**
 * Stages of the herd: a short ramp to RATE (the sale opens and everyone clicks at once), the
 * plateau for DURATION, then a short ramp down so in-flight requests finish inside the scenario.
 * @param {Config} cfg
 * @param {number} [rate]
 * @returns {{ target: number, duration: string }[]}
 */
export function herdStages(cfg, rate = cfg.rate) {
  return [
    { target: rate, duration: cfg.ramp },
    { target: rate, duration: cfg.duration },
    { target: 0, duration: '3s' },
  ];
}

/**
 * How many iterations a list of arrival-rate stages schedules (trapezoids of rate over time).
 * @param {{ target: number, duration: string }[]} stages
 * @param {number} [startRate]
 * @returns {number}
 */
export function plannedIterations(stages, startRate = 0) {
  let from = startRate;
  let total = 0;
  for (const stage of stages) {
    total += ((from + stage.target) / 2) * parseDuration(stage.duration);
    from = stage.target;
  }
  return Math.round(total);
}

/**
 * The bound on dropped iterations: MAX_DROPPED, or 1 % of what was planned. A dropped iteration
 * is one k6 could not start because every VU was busy: beyond a few, the offered load was not
 * what the run claims, and the latency numbers are flattered.
 * @param {number} planned
 * @returns {number}
 */
export function maxDropped(planned) {
  return envInt('MAX_DROPPED', Math.max(10, Math.ceil(planned * 0.01)), 0);
}

/**
 * The dropped_iterations threshold of a scenario running these arrival-rate stages.
 * @param {{ target: number, duration: string }[]} stages
 * @returns {string[]}
 */
export function droppedThreshold(stages) {
  return [`count<=${maxDropped(plannedIterations(stages))}`];
}

/**
 * A product id unique to this run (k6 runs setup() once, so all VUs share it through `data`).
 * @param {string} prefix
 * @returns {string}
 */
export function uniqueProductId(prefix) {
  const stamp = Date.now().toString(36);
  const salt = Math.floor(Math.random() * 1679616) // 36^4: four base-36 digits
    .toString(36)
    .padStart(4, '0');
  return `${prefix}-${stamp}-${salt}`.slice(0, 64);
}

// ---------------------------------------------------------------------------------------------
// Metrics shared by every scenario (created at import time, i.e. in the init context)

export const metrics = {
  /** 202: a unit was reserved. Compared against stock: more than stock is an oversell. */
  accepted: new Counter('accepted'),
  /** 409 sold_out: the normal answer once stock is gone. */
  soldOut: new Counter('sold_out'),
  /** 429 queued: the waiting room holds the buyer's place; it comes back with its ticket. */
  queued: new Counter('queued'),
  /** 429 busy with Retry-After: shard locks were contended or the API shed load; the client retries. */
  busy: new Counter('busy'),
  /** 429 rate_limited with Retry-After: this buyer or address is over its rate limit. */
  rateLimited: new Counter('rate_limited'),
  /** Retries after a 429 busy or rate_limited (same Idempotency-Key, after Retry-After plus jitter). */
  retries: new Counter('retries'),
  /** Returns after a 429 queued (same Idempotency-Key and the ticket, after retryAfterMs). */
  queuePolls: new Counter('queue_polls'),
  /** Queued buyers who gave up: their next return would have come QUEUE_GIVE_UP s after their first request. */
  gaveUp: new Counter('gave_up'),
  /** Anything outside the contract: other statuses, 5xx, timeouts, malformed bodies. */
  unexpected: new Counter('unexpected'),
  /** Per response: was it outside the contract? The threshold is rate==0. */
  unexpectedStatus: new Rate('unexpected_status'),
  /** Per response: was it 429 busy? Bounded only when MAX_BUSY_RATE is set. */
  busyRate: new Rate('busy_rate'),
  /** Per response: was it 429 queued? Not bounded: under excess demand it is the contract's answer. */
  queuedRate: new Rate('queued_rate'),
  /** Latency of 202s only: the hot path (lock, decrement, enqueue). */
  acceptedLatency: new Trend('accepted_latency', true),
  /** POST /api/orders/:id/pay answered 200 paid. */
  paid: new Counter('paid'),
  /** Payments answered 409 order_expired: sent too late (the order had expired, its units went back). */
  payTooLate: new Counter('pay_too_late'),
  /** Payments answered anything else: outside the contract. */
  payUnexpected: new Counter('pay_unexpected'),
};

/** Server state after the writer drained, recorded by teardown for the summary's cross-check. */
const finalState = {
  total: new Gauge('final_total'),
  available: new Gauge('final_available'),
  sold: new Gauge('final_sold'),
  /** Units of expired or cancelled orders given back (a 202 the server no longer counts as sold). */
  returned: new Gauge('final_returned'),
  reserved: new Gauge('final_reserved'),
  confirmed: new Gauge('final_confirmed'),
};

/**
 * Thresholds every buyer scenario carries.
 * @param {Config} cfg
 * @param {number | undefined} maxUnits  units that may be sold at most (stock, plus restocks if any);
 *   undefined: no client-side bound (expired units are sold again)
 * @returns {Record<string, string[]>}
 */
export function commonThresholds(cfg, maxUnits) {
  /** @type {Record<string, string[]>} */
  const thresholds = {
    // Latency of accepted orders, i.e. of the locked decrement + enqueue path.
    'http_req_duration{status:202}': [`p(95)<${cfg.p95Ms}`, `p(99)<${cfg.p99Ms}`],
    // Every answer must be 202, 409 sold_out or 429 queued/busy/rate_limited with a well-formed body
    // and Retry-After. 429s are expected under overload and not failures; anything else is.
    unexpected_status: ['rate==0'],
    unexpected: ['count==0'],
    // Invariant 1 seen from the client: never more 202s than units put on sale (not bounded when
    // units come back by expiry and are sold again: the server's numbers are checked in teardown).
    ...(maxUnits === undefined ? {} : { accepted: [`count<=${maxUnits}`] }),
    // Invariants 1-3 seen from the server after the writer drained (checks made in teardown).
    'checks{invariant:yes}': ['rate==1'],
  };
  // 429 is a legitimate answer under contention; how many are acceptable depends on shards,
  // LOCK_WAIT_MS and the rate, so the bound is opt-in.
  const maxBusy = envString('MAX_BUSY_RATE', '');
  if (maxBusy !== '') thresholds.busy_rate = [`rate<=${envNumber('MAX_BUSY_RATE', 1)}`];
  return thresholds;
}

/** Trend statistics printed and written to the JSON summary. */
export const summaryTrendStats = ['avg', 'min', 'med', 'max', 'p(90)', 'p(95)', 'p(99)', 'count'];

/**
 * Options every scenario carries besides its scenarios and thresholds: setup() waits for the
 * service to be ready and teardown() for the writer to drain, each with a minute to spare.
 * @param {Config} cfg
 */
export function runOptions(cfg) {
  return {
    teardownTimeout: toDuration(cfg.drainTimeoutSec + 60),
    setupTimeout: toDuration(cfg.readyTimeoutSec + 60),
    summaryTrendStats,
  };
}

/**
 * The herd as a k6 scenario: arrivals along `stages` (herdStages), whether or not earlier
 * answers came back (open model), each running the exported function `execName`.
 * @param {Config} cfg
 * @param {{ target: number, duration: string }[]} stages
 * @param {string} [execName]
 * @returns {import('k6/options').Scenario}
 */
export function herdScenario(cfg, stages, execName = 'buyer') {
  return {
    executor: 'ramping-arrival-rate',
    startRate: 0,
    timeUnit: '1s',
    preAllocatedVUs: cfg.vus,
    maxVUs: cfg.maxVus,
    stages,
    exec: execName,
  };
}

/**
 * 409 and 429 are answers the contract promises, not failures (nor a streaming buyer's 200 event
 * stream): keeps them out of http_req_failed, so that metric only shows transport errors and 5xx.
 * Call in the init context.
 */
export function expectBuyerStatuses() {
  http.setResponseCallback(http.expectedStatuses(200, 202, 409, 429));
}

// ---------------------------------------------------------------------------------------------
// Buyer

/** @typedef {import('./contract.js').Outcome} Outcome */

// Per VU: each VU is its own JS runtime, so this caps the log at a few lines per VU.
let unexpectedLogged = 0;

/**
 * @param {import('k6/http').RefinedResponse<any>} res
 * @returns {Record<string, unknown> | null}
 */
function jsonBody(res) {
  try {
    const body = res.json();
    return body !== null && typeof body === 'object' && !Array.isArray(body)
      ? /** @type {Record<string, unknown>} */ (body)
      : null;
  } catch {
    return null;
  }
}

/** Longest wait between two tries of one buyer, s. */
const RETRY_CAP_SEC = 30;

/**
 * How long a client waits before retrying a 429: never less than its Retry-After (1 s when absent),
 * doubling with each retry up to RETRY_CAP_SEC, plus up to half again at random, so refused clients
 * do not come back in one wave.
 * @param {unknown} retryAfter  the Retry-After header (seconds)
 * @param {number} attempt      retries made so far (0 for the first)
 * @returns {number} seconds
 */
export function retryDelay(retryAfter, attempt) {
  const floor = Math.max(1, Number(retryAfter) || 1);
  const backoff = Math.min(RETRY_CAP_SEC, floor * 2 ** attempt);
  return backoff * (1 + Math.random() * 0.5);
}

/**
 * Counts one answer by its outcome (each try of a buyer is an answer).
 * @param {Outcome} outcome
 * @param {string} reason
 * @param {import('k6/http').RefinedResponse<any>} res
 */
function countAnswer(outcome, reason, res) {
  metrics.unexpectedStatus.add(outcome === 'unexpected');
  metrics.busyRate.add(outcome === 'busy');
  metrics.queuedRate.add(outcome === 'queued');
  if (outcome === 'accepted') {
    metrics.accepted.add(1);
    metrics.acceptedLatency.add(res.timings.duration);
  } else if (outcome === 'sold_out') {
    metrics.soldOut.add(1);
  } else if (outcome === 'queued') {
    metrics.queued.add(1);
  } else if (outcome === 'busy') {
    metrics.busy.add(1);
  } else if (outcome === 'rate_limited') {
    metrics.rateLimited.add(1);
  } else {
    metrics.unexpected.add(1, { reason });
    if (unexpectedLogged < 3) {
      unexpectedLogged++;
      console.warn(
        `unexpected answer (${reason}): ${res.status} ${String(res.body ?? res.error).slice(0, 300)}`,
      );
    }
  }
}

/**
 * One buyer's order across its tries: the same body and Idempotency-Key every time, and the
 * Queue-Ticket once the waiting room gave one.
 * @typedef {object} Purchase
 * @property {string} productId
 * @property {string} userId
 * @property {string} body
 * @property {Record<string, string>} headers
 * @property {number} firstAt      Date.now() at the first request (0 before it)
 * @property {number} requests     sent so far
 * @property {number} busyRetries  retries after busy or rate_limited so far
 */

/**
 * @param {Config} cfg
 * @param {string} productId
 * @param {string} userId
 * @returns {Purchase}
 */
export function purchase(cfg, productId, userId) {
  /** @type {Record<string, string>} */
  const headers = { 'Content-Type': 'application/json' };
  // The key is unique per buyer and kept across its retries: a retry can never order twice.
  if (cfg.idempotency) headers['Idempotency-Key'] = userId;
  const body = JSON.stringify({ productId, userId, quantity: 1 });
  return { productId, userId, body, headers, firstAt: 0, requests: 0, busyRetries: 0 };
}

/** The tags of every buyer request. */
export const ORDER_TAGS = { name: 'POST /api/orders' };

/**
 * Counts a try about to be sent (call right before sending it).
 * @param {Purchase} p
 */
export function sending(p) {
  if (p.requests === 0) p.firstAt = Date.now();
  p.requests += 1;
}

/**
 * Reads the answer to a try, counts it, and says what the buyer does next, as the contract asks of a
 * client: after 429 queued it keeps the ticket (and the Idempotency-Key) and comes back after
 * retryAfterMs, until its order is placed, sold out, or it gives up (its next return would come
 * cfg.queueGiveUpSec after its first request); after 429 busy or rate_limited it backs off
 * (retryDelay), at most cfg.retries times; anything else ends it. `waitSec` undefined: done.
 * @param {Config} cfg
 * @param {Purchase} p
 * @param {import('k6/http').RefinedResponse<any>} res
 * @returns {{ outcome: Outcome, waitSec: number | undefined }}
 */
export function answered(cfg, p, res) {
  const body = jsonBody(res);
  const { outcome, reason } = classifyAnswer(
    res.status,
    body,
    res.headers['Retry-After'],
    p.productId,
    p.userId,
  );
  countAnswer(outcome, reason, res);
  if (outcome === 'queued' && isPlace(body)) {
    p.headers['Queue-Ticket'] = body.ticket;
    if (Date.now() + body.retryAfterMs - p.firstAt > cfg.queueGiveUpSec * 1000) {
      metrics.gaveUp.add(1);
      return { outcome, waitSec: undefined };
    }
    metrics.queuePolls.add(1);
    return { outcome, waitSec: body.retryAfterMs / 1000 };
  }
  if ((outcome === 'busy' || outcome === 'rate_limited') && p.busyRetries < cfg.retries) {
    metrics.retries.add(1);
    p.busyRetries += 1;
    return { outcome, waitSec: retryDelay(res.headers['Retry-After'], p.busyRetries - 1) };
  }
  return { outcome, waitSec: undefined };
}

/**
 * One buyer: POST /api/orders for one unit, classified and counted, and sent again as a
 * well-behaved client does (answered()). The outcome returned is the last one.
 * @param {Config} cfg
 * @param {string} productId
 * @param {string} userId
 * @returns {{ outcome: Outcome, res: import('k6/http').RefinedResponse<any> }}
 */
export function buy(cfg, productId, userId) {
  const p = purchase(cfg, productId, userId);
  for (;;) {
    sending(p);
    const res = http.post(`${cfg.baseUrl}/api/orders`, p.body, { headers: p.headers, tags: ORDER_TAGS });
    const { outcome, waitSec } = answered(cfg, p, res);
    if (waitSec === undefined) return { outcome, res };
    sleep(waitSec);
  }
}

/**
 * A user id unique across the whole run: iterationInTest is unique per scenario across all VUs,
 * and the scenario name and run id keep scenarios and reruns apart (the per-user limit counts
 * per product and user).
 * @param {string} runId
 * @returns {string}
 */
export function uniqueUserId(runId) {
  return `${runId}-${exec.scenario.name}-${exec.scenario.iterationInTest}`;
}

/** @typedef {{ productId: string, runId: string }} SaleData  what setup() hands every VU */

/**
 * One buyer not seen before in this run buys one unit of the run's sale.
 * @param {Config} cfg
 * @param {SaleData} data
 */
export function buyAsNewUser(cfg, data) {
  return buy(cfg, data.productId, uniqueUserId(data.runId));
}

/**
 * The buyer pays its order: POST /api/orders/:orderId/pay. 200 paid counts `paid`; 409
 * order_expired (sent after the deadline) counts `pay_too_late`; anything else `pay_unexpected`.
 * @param {Config} cfg
 * @param {string} orderId
 * @param {string} userId
 * @returns {boolean} paid
 */
export function pay(cfg, orderId, userId) {
  const res = http.post(`${cfg.baseUrl}/api/orders/${orderId}/pay`, JSON.stringify({ userId }), {
    headers: { 'Content-Type': 'application/json' },
    tags: { name: 'POST /api/orders/:id/pay' },
    responseCallback: http.expectedStatuses(200, 409),
  });
  const body = jsonBody(res);
  if (res.status === 200 && body?.status === 'paid' && body.orderId === orderId) {
    metrics.paid.add(1);
    return true;
  }
  if (res.status === 409 && body?.error === 'order_expired') metrics.payTooLate.add(1);
  else {
    metrics.payUnexpected.add(1);
    console.warn(`unexpected payment answer: ${res.status} ${String(res.body ?? res.error).slice(0, 300)}`);
  }
  return false;
}

/**
 * One new buyer buys one unit and, with probability `payRatio`, pays it at once; the others
 * abandon their checkout, and their units come back on sale when the payment window closes.
 * @param {Config} cfg
 * @param {SaleData} data
 * @param {number} payRatio
 */
export function buyAndMaybePay(cfg, data, payRatio) {
  const userId = uniqueUserId(data.runId);
  const { outcome, res } = buy(cfg, data.productId, userId);
  if (outcome !== 'accepted' || Math.random() >= payRatio) return;
  pay(cfg, String(jsonBody(res)?.orderId), userId);
}

/**
 * The closing buyers of a sale with a payment window: once every order has its fate, new buyers
 * buy and pay one unit each until the answer is sold_out, so every unit ends paid (at most `max`).
 * Returns how many units they bought.
 * @param {Config} cfg
 * @param {SaleData} data
 * @param {number} max
 */
export function closingBuyers(cfg, data, max) {
  let bought = 0;
  for (let i = 0; i < max; i++) {
    const userId = `${data.runId}-closing-${i}`;
    const { outcome, res } = buy(cfg, data.productId, userId);
    if (outcome === 'sold_out') break;
    if (outcome !== 'accepted') continue;
    if (pay(cfg, String(jsonBody(res)?.orderId), userId)) bought += 1;
  }
  return bought;
}

// ---------------------------------------------------------------------------------------------
// Admin API

/**
 * @typedef {object} AdminState  GET /admin/products/:id
 * @property {number} available
 * @property {number} sold
 * @property {number} reserved
 * @property {number} confirmed
 * @property {number} total
 * @property {number} [paid]             units of paid orders
 * @property {number} [returning]        units of expired/cancelled orders not yet back on sale
 * @property {number} [returned]         units of expired/cancelled orders ever given back
 * @property {number} [awaitingPayment]  orders waiting for their payment
 * @property {{ paid: number, expired: number, cancelled: number }} [orders]
 * @property {number} generation
 * @property {{ index: number, key: string, stock: number }[]} shards
 */

/**
 * @typedef {object} AdminResult
 * @property {number} status
 * @property {any} body  parsed JSON, or null
 * @property {string} text
 */

/**
 * An admin request. Its own response callback keeps admin 200/201 out of http_req_failed
 * (the global callback only expects the buyer statuses), and its `name` tag keeps admin
 * latencies apart from the buyers'.
 * @param {Config} cfg
 * @param {string} method
 * @param {string} path
 * @param {unknown} body
 * @param {string} name
 * @returns {AdminResult}
 */
export function admin(cfg, method, path, body, name) {
  const res = http.request(
    method,
    `${cfg.baseUrl}${path}`,
    body === undefined ? null : JSON.stringify(body),
    {
      headers: { Authorization: `Bearer ${cfg.adminToken}`, 'Content-Type': 'application/json' },
      tags: { name, kind: 'admin' },
      responseCallback: http.expectedStatuses(200, 201),
      timeout: '30s',
    },
  );
  /** @type {any} */
  let parsed = null;
  try {
    parsed = res.json();
  } catch {
    parsed = null;
  }
  return { status: res.status, body: parsed, text: String(res.body ?? res.error ?? '') };
}

/**
 * Waits until /readyz answers 200 (Redis and Postgres reachable), so a run started right after
 * `docker-compose up` does not fail on its first requests.
 * @param {Config} cfg
 */
export function waitForReady(cfg) {
  const deadline = Date.now() + cfg.readyTimeoutSec * 1000;
  let last = '';
  while (Date.now() < deadline) {
    const res = http.get(`${cfg.baseUrl}/readyz`, {
      tags: { name: 'GET /readyz', kind: 'admin' },
      responseCallback: http.expectedStatuses(200),
      timeout: '5s',
    });
    if (res.status === 200) return;
    last = `${res.status} ${String(res.body ?? res.error).slice(0, 200)}`;
    sleep(1);
  }
  fail(`${cfg.baseUrl}/readyz not ready after ${cfg.readyTimeoutSec}s (last answer: ${last})`);
}

/**
 * setup() of every scenario: wait for the service, create the sale, hand the ids to the VUs.
 * @param {Config} cfg
 * @param {string} scenarioName
 * @param {{ stock?: number, shards?: number, paymentTimeoutSec?: number }} [overrides]
 * @returns {SaleData}
 */
export function startSale(cfg, scenarioName, overrides = {}) {
  if (cfg.adminToken === '')
    fail('ADMIN_TOKEN is not set: pass -e ADMIN_TOKEN=... (the token the service runs with)');
  waitForReady(cfg);
  const productId = cfg.productId || uniqueProductId(`lt-${scenarioName}`);
  const stock = overrides.stock ?? cfg.stock;
  const shards = overrides.shards ?? cfg.shards;
  /** @type {Record<string, number>} */
  const body = { stock, shards };
  if (cfg.perUserLimit !== undefined) body.perUserLimit = cfg.perUserLimit;
  if (overrides.paymentTimeoutSec) body.paymentTimeoutSec = overrides.paymentTimeoutSec;
  const res = admin(cfg, 'PUT', `/admin/products/${productId}`, body, 'PUT /admin/products/:id');
  if (res.status === 401 || res.status === 403) fail(`admin API refused ADMIN_TOKEN (${res.status})`);
  if (res.status !== 200 && res.status !== 201) {
    fail(`could not create sale ${productId}: ${res.status} ${res.text.slice(0, 300)}`);
  }
  console.log(`sale ${productId}: stock ${stock} on ${shards} shards at ${cfg.baseUrl}`);
  return { productId, runId: Date.now().toString(36) };
}

/**
 * The functions a herd scenario exports for k6: setup() creates the sale (startSale), buyer()
 * is one new user buying one unit, teardown() checks the invariants with `expect`.
 * @param {Config} cfg
 * @param {string} scenarioName
 * @param {Expectations} expect
 */
export function herdSale(cfg, scenarioName, expect) {
  return {
    setup: () => startSale(cfg, scenarioName),
    /** @param {SaleData} data */
    buyer: (data) => {
      buyAsNewUser(cfg, data);
    },
    /** @param {SaleData} data */
    teardown: (data) => verifyInvariants(cfg, data.productId, expect),
  };
}

/**
 * @param {Config} cfg
 * @param {string} productId
 * @returns {AdminState | null}
 */
export function adminState(cfg, productId) {
  const res = admin(cfg, 'GET', `/admin/products/${productId}`, undefined, 'GET /admin/products/:id');
  return res.status === 200 ? res.body : null;
}

/**
 * Polls the admin view until no reservation is left (the writer persisted every accepted
 * order), or the deadline passes. Only then are sold/confirmed comparable.
 * @param {Config} cfg
 * @param {string} productId
 * @param {boolean} [payment]  the sale has a payment window: also wait until no order is unpaid
 * @returns {{ state: AdminState | null, drained: boolean, waitedSec: number }}
 */
export function waitForDrain(cfg, productId, payment = false) {
  const started = Date.now();
  const deadline = started + cfg.drainTimeoutSec * 1000;
  /** @type {AdminState | null} */
  let state = null;
  while (Date.now() < deadline) {
    state = adminState(cfg, productId);
    // Drained: every order persisted, and (with a payment window) every order paid or expired, its
    // fate recorded and its units back on sale.
    const settled =
      (state?.returning ?? 0) === 0 &&
      (state?.awaitingPayment ?? 0) === 0 &&
      (!payment || state?.confirmed === 0);
    if (state !== null && state.reserved === 0 && settled) {
      return { state, drained: true, waitedSec: (Date.now() - started) / 1000 };
    }
    sleep(0.5);
  }
  return { state, drained: false, waitedSec: (Date.now() - started) / 1000 };
}

/**
 * Marks the run failed. exec.test.fail() (recent k6) lets teardown and handleSummary finish and
 * exits with 110; older k6 lacks it, and fail() throws out of teardown, which also ends the run
 * with a non-zero exit code.
 * @param {string} message
 */
export function failRun(message) {
  console.error(message);
  /** @type {{ fail?: (message?: string) => void }} */
  const test = exec.test;
  if (typeof test.fail === 'function') test.fail(message);
  else fail(message);
}

/**
 * @typedef {object} Expectations
 * @property {number} [total]              total must equal this (no restock in the run)
 * @property {(total: number) => boolean} [totalOk]  or satisfy this (restocks)
 * @property {boolean} [soldOut]           every unit must be sold by the end
 * @property {boolean} [payment]           the sale has a payment window: every sold unit paid
 * @property {boolean} [allPaid]           and every unit ends paid (the closing buyers bought the rest)
 */

/**
 * teardown() of every scenario: wait for the writer, then check the invariants of DESIGN.md §5
 * on the server's own numbers and on the reconcile endpoint (Redis against Postgres).
 * Each invariant is a check tagged invariant:yes (threshold rate==1) and any failure also fails
 * the run with a message that names it.
 * @param {Config} cfg
 * @param {string} productId
 * @param {Expectations} [expect]
 */
export function verifyInvariants(cfg, productId, expect = {}) {
  const { state, drained, waitedSec } = waitForDrain(cfg, productId, expect.payment === true);
  const rec = admin(
    cfg,
    'GET',
    `/admin/products/${productId}/reconcile`,
    undefined,
    'GET /admin/products/:id/reconcile',
  );
  const s = state ?? /** @type {AdminState} */ ({});
  const numeric = ['available', 'sold', 'reserved', 'confirmed', 'total'].every(
    (k) => typeof (/** @type {Record<string, unknown>} */ (s)[k]) === 'number',
  );
  if (numeric) {
    finalState.total.add(s.total);
    finalState.available.add(s.available);
    finalState.sold.add(s.sold);
    finalState.reserved.add(s.reserved);
    finalState.confirmed.add(s.confirmed);
    finalState.returned.add(s.returned ?? 0);
  }
  const shardSum = Array.isArray(s.shards)
    ? s.shards.reduce((sum, shard) => sum + shard.stock, 0)
    : Number.NaN;

  /** @type {Record<string, boolean>} */
  const conditions = {
    'admin view answers with available/sold/reserved/confirmed/total': numeric,
    [`writer drained within ${cfg.drainTimeoutSec}s (reserved == 0)`]: drained,
    'no oversell: sold <= total': s.sold <= s.total && s.available >= 0,
    'nothing lost: confirmed + paid == sold after drain': s.confirmed + (s.paid ?? 0) === s.sold,
    'sold == reserved + confirmed + paid': s.sold === s.reserved + s.confirmed + (s.paid ?? 0),
    'conservation: available + returning + sold == total':
      s.available + (s.returning ?? 0) + s.sold === s.total,
    'shards hold exactly the available stock': shardSum === s.available,
    'reconcile: Redis and Postgres agree (ok == true)': rec.status === 200 && rec.body?.ok === true,
  };
  if (expect.total !== undefined)
    conditions[`total == ${expect.total} (stock put on sale)`] = s.total === expect.total;
  if (expect.totalOk)
    conditions['total matches the stock and restocks put on sale'] = expect.totalOk(s.total);
  if (expect.payment) {
    conditions['pay or expire: every sold unit is paid (no order left unpaid)'] = s.paid === s.sold;
    conditions['expired units came back: returned == expired units, none still on the way'] =
      (s.returning ?? 0) === 0 && (s.orders?.expired ?? 0) <= (s.returned ?? 0);
  }
  if (expect.allPaid) conditions['every unit ends paid: paid == total'] = s.paid === s.total;
  if (expect.soldOut) {
    conditions['sold out for real: available == 0 (no unit left behind a sold_out answer)'] =
      s.available === 0;
  }

  for (const [name, ok] of Object.entries(conditions))
    check(null, { [name]: () => ok }, { invariant: 'yes' });
  const broken = Object.entries(conditions)
    .filter(([, ok]) => !ok)
    .map(([name]) => name);

  const view = state
    ? `total=${s.total} available=${s.available} sold=${s.sold} reserved=${s.reserved} confirmed=${s.confirmed} paid=${s.paid ?? 0} returned=${s.returned ?? 0} orders=${JSON.stringify(s.orders ?? {})} generation=${s.generation} shards=${Array.isArray(s.shards) ? s.shards.length : '?'}`
    : 'admin view unavailable';
  console.log(`after ${waitedSec.toFixed(1)}s drain: ${view}`);
  if (broken.length > 0) {
    const differences = rec.body?.differences
      ? ` reconcile differences: ${JSON.stringify(rec.body.differences).slice(0, 1000)}`
      : '';
    failRun(`INVARIANT BROKEN for ${productId}: ${broken.join('; ')}. ${view}.${differences}`);
  }
}

// ---------------------------------------------------------------------------------------------
// Summary

/**
 * Values of one metric in either summary shape k6 hands to handleSummary: the classic one
 * (`data.metrics[name].values`) or the machine-readable one of k6 >= 1.5 when enabled
 * (`data.results.metrics[] = {name, values}`).
 * @param {any} data
 * @param {string} name
 * @returns {Record<string, number> | undefined}
 */
export function metricValues(data, name) {
  if (data?.metrics?.[name]) return data.metrics[name].values;
  const list = data?.results?.metrics;
  if (Array.isArray(list)) return list.find((m) => m.name === name)?.values;
  return undefined;
}

/**
 * @param {number | undefined} ms
 * @returns {string}
 */
function fmtMs(ms) {
  return ms === undefined ? '-' : ms >= 1000 ? `${(ms / 1000).toFixed(2)}s` : `${ms.toFixed(1)}ms`;
}

/**
 * The client/server cross-check: every 202 the client saw must be a unit the server counts as
 * sold, or as given back by expiry or cancellation. The server may count more than the client saw (a response lost to a client timeout),
 * never fewer. Only handleSummary has both numbers, so this is reported, not a threshold.
 * @param {any} data
 */
function crossCheck(data) {
  const accepted = metricValues(data, 'accepted')?.count ?? 0;
  const soldNow = metricValues(data, 'final_sold')?.value;
  if (soldNow === undefined)
    return { accepted, serverSold: null, ok: null, note: 'teardown recorded no server state' };
  // Units of expired or cancelled orders were accepted once and given back (each order is one unit).
  const sold = soldNow + (metricValues(data, 'final_returned')?.value ?? 0);
  const ok = accepted <= sold;
  const note = !ok
    ? `LOSS: the client got ${accepted - sold} more 202s than the server counts as sold`
    : accepted < sold
      ? `server sold ${sold - accepted} more than the client saw accepted (responses lost to timeouts/errors)`
      : 'every 202 is a sold unit';
  return { accepted, serverSold: sold, ok, note };
}

/**
 * Threshold lines of the classic summary shape ("✓ metric  expr  (observed)").
 * @param {any} data
 * @returns {{ lines: string[], failed: number }}
 */
function thresholdLines(data) {
  const lines = [];
  let failed = 0;
  for (const [name, metric] of Object.entries(data?.metrics ?? {})) {
    const m = /** @type {any} */ (metric);
    for (const [expr, result] of Object.entries(m.thresholds ?? {})) {
      const ok = /** @type {any} */ (result).ok;
      if (!ok) failed++;
      const agg = /^\s*([a-z]+(?:\([\d.]+\))?)/.exec(expr)?.[1] ?? '';
      const observed = m.values?.[agg];
      const shown =
        observed === undefined
          ? ''
          : m.contains === 'time'
            ? fmtMs(observed)
            : String(Math.round(observed * 10000) / 10000);
      lines.push(`    ${ok ? '✓' : '✗'} ${name}  ${expr}${shown === '' ? '' : `  (${agg}=${shown})`}`);
    }
  }
  return { lines, failed };
}

/**
 * The text summary: thresholds, outcomes, latency of the hot path, the server's state after
 * drain and the cross-check. Written here instead of importing jslib's textSummary so the
 * scripts run offline and keep working whichever summary shape k6 hands over.
 * @param {string} name
 * @param {any} data
 * @param {string[]} [extra]  scenario-specific lines
 * @returns {string}
 */
export function renderSummary(name, data, extra = []) {
  const v = (/** @type {string} */ metric, /** @type {string} */ key) => metricValues(data, metric)?.[key];
  const count = (/** @type {string} */ metric) => v(metric, 'count') ?? 0;
  const { lines: tLines, failed } = thresholdLines(data);
  const passed = data?.results?.passed;
  const cc = crossCheck(data);
  const lat = metricValues(data, 'accepted_latency');
  const out = [
    '',
    `  ${name}: ${tLines.length > 0 ? (failed === 0 ? 'all thresholds passed' : `${failed} threshold(s) FAILED`) : passed === undefined ? '' : passed ? 'passed' : 'FAILED'}`,
    '',
    '  thresholds',
    ...(tLines.length > 0 ? tLines : ['    (not in this summary shape; see the JSON file)']),
    '',
    '  outcomes',
    `    accepted ${count('accepted')}   sold_out ${count('sold_out')}   queued ${count('queued')} (${fmtRate(v('queued_rate', 'rate'))})   busy ${count('busy')} (${fmtRate(v('busy_rate', 'rate'))})   rate_limited ${count('rate_limited')}   retries ${count('retries')}   queue returns ${count('queue_polls')}   gave up ${count('gave_up')}   unexpected ${count('unexpected')}`,
    `    http_reqs ${count('http_reqs')}   dropped_iterations ${count('dropped_iterations')}   checks ${fmtRate(metricValues(data, 'checks')?.rate)}`,
    '',
    '  latency of accepted orders (202)',
    lat
      ? `    avg ${fmtMs(lat.avg)}  med ${fmtMs(lat.med)}  p95 ${fmtMs(lat['p(95)'])}  p99 ${fmtMs(lat['p(99)'])}  max ${fmtMs(lat.max)}`
      : '    (no 202 answers)',
    '',
    '  server after drain',
    cc.serverSold === null
      ? '    (not recorded)'
      : `    total ${v('final_total', 'value')}  available ${v('final_available', 'value')}  sold ${v('final_sold', 'value')}  reserved ${v('final_reserved', 'value')}  confirmed ${v('final_confirmed', 'value')}`,
    `    client/server: ${cc.ok === false ? '✗' : '✓'} ${cc.note}`,
    ...extra,
    '',
  ];
  return out.join('\n');
}

/**
 * @param {number | undefined} rate
 * @returns {string}
 */
function fmtRate(rate) {
  return rate === undefined ? '-' : `${(rate * 100).toFixed(2)}%`;
}

/**
 * handleSummary body of every scenario: the text summary on stdout and the whole k6 summary,
 * plus the derived cross-check under `flashsale`, as JSON in SUMMARY_DIR (default loadtest/,
 * relative to the directory k6 runs in).
 * @param {string} name
 * @param {any} data
 * @param {{ lines?: string[], report?: Record<string, unknown> }} [extra]
 * @returns {Record<string, string>}
 */
export function writeSummary(name, data, extra = {}) {
  const dir = envString('SUMMARY_DIR', 'loadtest').replace(/\/+$/, '');
  const report = { scenario: name, crossCheck: crossCheck(data), ...(extra.report ?? {}) };
  return {
    stdout: renderSummary(name, data, extra.lines ?? []),
    [`${dir}/${name}.summary.json`]: JSON.stringify({ ...data, flashsale: report }, null, 2),
  };
}
