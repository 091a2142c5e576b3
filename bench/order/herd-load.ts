// The crowd of the bench's herd phase: buyers whose first orders are spread evenly over a window,
// each then following the order protocol as a well-behaved client: 429 queued → come back after
// retryAfterMs with its Queue-Ticket; 429 busy or rate_limited → back off (exponential, jittered,
// never sooner than Retry-After); 409 or 202 → done; give up once the next try would come later than
// giveUpMs after the first. Every try keeps the buyer's Idempotency-Key.
//
// One undici Pool (as open-load.ts: the generator's own CPU is taken from the service it measures),
// every latency counted from when the buyer sent the request, so time waiting for a free socket here
// counts too. Each buyer's first-request time and fate are kept for the fairness figures.
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Pool } from 'undici';
import { failureCode, orderPool } from './open-load.ts';

export interface HerdLoadOptions {
  url: string;
  productId: string;
  /** userIds are `<userPrefix>-<n>`. */
  userPrefix: string;
  buyers: number;
  /** First requests spread evenly over this window (ms). */
  spreadMs: number;
  giveUpMs: number;
  connections: number;
  /** A request unanswered this long counts as a timeout: its buyer stops, its outcome unknown. */
  timeoutMs: number;
}

export type Fate = 'accepted' | 'sold_out' | 'gave_up' | 'error';

/** One buyer, times in performance.now() ms. */
export interface BuyerRecord {
  firstAt: number;
  /** When its last request was sent and answered. */
  lastSentAt: number;
  doneAt: number;
  requests: number;
  fate: Fate;
}

export interface HerdLoadResult {
  buyers: BuyerRecord[];
  /** Every answered request, ms from its send to its answer. */
  latencies: Float64Array;
  /** By "status error" ("202", "409 sold_out", "429 queued", ...). */
  answers: Record<string, number>;
  /** Requests without an answer (reset, timeout), by code: their outcome is unknown. */
  errors: Record<string, number>;
  unknown: number;
  /** 202s: what the client knows was accepted. */
  accepted: number;
  /** How far behind its schedule a first request was sent at worst (ms): this process's own lag. */
  maxSendLagMs: number;
  /**
   * Answers by the second they came (counted from the first scheduled send), by "status error" as in
   * `answers`; `first` counts the buyers' first requests among them. Shows how long the herd's first
   * requests took to answer, and when the orders got through (herd-timeline.ts prints it).
   */
  timeline: Array<Record<string, number>>;
}

/** Longest back-off between two tries after busy, s (as loadtest/lib.js retryDelay). */
const BACKOFF_CAP_S = 30;

/** Seconds to wait after the n-th (0-based) busy: Retry-After doubled per retry, plus up to half again. */
function backoff(retryAfter: unknown, n: number): number {
  const floor = Math.max(1, Number(retryAfter) || 1);
  return Math.min(BACKOFF_CAP_S, floor * 2 ** n) * (1 + Math.random() * 0.5);
}

/** What a buyer does after an answer: stop with a fate, or wait so long (ms) and try again. */
type Next = { fate: Fate } | { waitMs: number; ticket?: string };

function next(status: number, body: Record<string, unknown>, retryAfter: unknown, busy: number): Next {
  if (status === 202) return { fate: 'accepted' };
  if (status === 409 && body.error === 'sold_out') return { fate: 'sold_out' };
  if (status === 429 && body.error === 'queued' && typeof body.ticket === 'string') {
    return { waitMs: Number(body.retryAfterMs) || 1000, ticket: body.ticket };
  }
  if (status === 429) return { waitMs: backoff(retryAfter, busy) * 1000 };
  return { fate: 'error' };
}

/** The run's pool, clock and tallies, shared by its buyers. */
interface Herd {
  o: HerdLoadOptions;
  pool: Pool;
  start: number;
  latencies: number[];
  answers: Record<string, number>;
  errors: Record<string, number>;
  timeline: Array<Record<string, number>>;
  maxSendLagMs: number;
}

/** Counts an answer in the second of the run it came in (and whether it was a buyer's first). */
function count(h: Herd, key: string, first: boolean): void {
  const second = Math.max(0, Math.floor((performance.now() - h.start) / 1000));
  for (let i = h.timeline.length; i <= second; i++) h.timeline.push({});
  const bin = h.timeline[second] as Record<string, number>;
  bin[key] = (bin[key] ?? 0) + 1;
  if (first) bin.first = (bin.first ?? 0) + 1;
}

/** One request of a buyer; what it does next. */
async function attempt(
  h: Herd,
  rec: BuyerRecord,
  headers: Record<string, string>,
  body: string,
  busy: number,
): Promise<Next> {
  const sent = performance.now();
  rec.lastSentAt = sent;
  rec.requests += 1;
  try {
    const res = await h.pool.request({ path: '/api/orders', method: 'POST', headers, body });
    const answer = (await res.body.json().catch(() => ({}))) as Record<string, unknown>;
    h.latencies.push(performance.now() - sent);
    const key = res.statusCode === 202 ? '202' : `${res.statusCode} ${String(answer.error)}`;
    h.answers[key] = (h.answers[key] ?? 0) + 1;
    count(h, key, rec.requests === 1);
    return next(res.statusCode, answer, res.headers['retry-after'], busy);
  } catch (err) {
    const code = failureCode(err);
    h.errors[code] = (h.errors[code] ?? 0) + 1;
    return { fate: 'error' };
  }
}

/** Buyer i: first request at its due time, then as the answers say until a fate or giving up. */
async function buyer(h: Herd, i: number): Promise<BuyerRecord> {
  const { o } = h;
  const due = h.start + (i * o.spreadMs) / o.buyers;
  await sleep(Math.max(0, due - performance.now()));
  const userId = `${o.userPrefix}-${i}`;
  const body = JSON.stringify({ productId: o.productId, userId, quantity: 1 });
  const headers: Record<string, string> = { 'content-type': 'application/json', 'idempotency-key': userId };
  const rec: BuyerRecord = {
    firstAt: performance.now(),
    lastSentAt: 0,
    doneAt: 0,
    requests: 0,
    fate: 'error',
  };
  h.maxSendLagMs = Math.max(h.maxSendLagMs, rec.firstAt - due);
  for (let busy = 0; ; ) {
    const step = await attempt(h, rec, headers, body, busy);
    rec.doneAt = performance.now();
    if ('fate' in step) return { ...rec, fate: step.fate };
    if (step.ticket) headers['queue-ticket'] = step.ticket;
    else busy += 1;
    if (performance.now() + step.waitMs - rec.firstAt > o.giveUpMs) return { ...rec, fate: 'gave_up' };
    await sleep(step.waitMs);
  }
}

/** Runs the herd until every buyer has its fate. */
export async function herdLoad(o: HerdLoadOptions): Promise<HerdLoadResult> {
  const pool = orderPool(o.url, o.connections, o.timeoutMs);
  const h: Herd = {
    o,
    pool,
    start: performance.now() + 50,
    latencies: [],
    answers: {},
    errors: {},
    timeline: [],
    maxSendLagMs: 0,
  };
  const buyers = await Promise.all(Array.from({ length: o.buyers }, (_, i) => buyer(h, i)));
  await pool.close();
  return {
    buyers,
    latencies: Float64Array.from(h.latencies),
    answers: h.answers,
    errors: h.errors,
    unknown: Object.values(h.errors).reduce((a, b) => a + b, 0),
    accepted: h.answers['202'] ?? 0,
    maxSendLagMs: h.maxSendLagMs,
    timeline: h.timeline,
  };
}
