// The crowd of the bench's herd phase: buyers whose first orders are spread evenly over a window,
// each then following the order protocol through @flashsale/client: streaming (one request, held
// until its result) or polling (429 queued → come back after retryAfterMs with its Queue-Ticket;
// busy → back off); given up giveUpMs after the first request. Every try keeps the buyer's key.
//
// One undici Pool (as open-load.ts: the generator's own CPU is taken from the service it measures),
// every latency counted from when the buyer sent the request, so time waiting for a free socket here
// counts too. Each buyer's first-request time and fate are kept for the fairness figures.
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import { FlashsaleClient, type Progress } from '@flashsale/client';
import { type Pool, fetch as undiciFetch } from 'undici';
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
  /** Buyers ask for a stream (Accept: text/event-stream) rather than poll. */
  stream: boolean;
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

/** The answer a progress report stands for, keyed as `answers` is. */
const ANSWER_OF: Record<string, string> = {
  queued: '429 queued',
  waiting_for_start: '409 not_started',
  'retrying:busy': '429 busy',
  'retrying:rate_limited': '429 rate_limited',
  'retrying:unavailable': '503 unavailable',
  'retrying:timeout': '408 request_timeout',
  'retrying:in_progress': '409 request_in_progress',
};

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

/** A fetch through the run's pool for one buyer: each request counted, its latency from its send to its head. */
function pooledFetch(h: Herd, rec: BuyerRecord): typeof fetch {
  return async (input, init) => {
    const sent = performance.now();
    rec.lastSentAt = sent;
    rec.requests += 1;
    try {
      const res = await undiciFetch(input as string, { ...(init as object), dispatcher: h.pool });
      // A stream's head comes with its first event: this is the time to the first byte.
      h.latencies.push(performance.now() - sent);
      return res as unknown as Response;
    } catch (err) {
      const code = failureCode(err);
      h.errors[code] = (h.errors[code] ?? 0) + 1;
      throw err;
    }
  };
}

/** Counts an answer (a progress report's, or the final one) of a buyer. */
function tally(h: Herd, rec: BuyerRecord, key: string): void {
  h.answers[key] = (h.answers[key] ?? 0) + 1;
  count(h, key, rec.requests === 1);
}

/** The buyer's order through @flashsale/client, streaming when `o.stream`; its fate. */
async function order(h: Herd, rec: BuyerRecord, userId: string): Promise<Fate> {
  const { o } = h;
  const client = new FlashsaleClient({
    baseUrl: o.url,
    userId,
    fetch: pooledFetch(h, rec),
    stream: o.stream,
  });
  const onProgress = (p: Progress) => {
    const key = ANSWER_OF[p.phase === 'retrying' ? `retrying:${p.reason}` : p.phase];
    if (key) tally(h, rec, key);
  };
  const signal = AbortSignal.timeout(o.giveUpMs);
  try {
    const r = await client.placeOrder(
      { productId: o.productId, quantity: 1 },
      { signal, onProgress, idempotencyKey: userId },
    );
    tally(h, rec, r.outcome === 'ordered' ? '202' : `409 ${r.outcome}`);
    return r.outcome === 'ordered' ? 'accepted' : r.outcome === 'sold_out' ? 'sold_out' : 'error';
  } catch (err) {
    if (signal.aborted) return 'gave_up';
    const code = `client ${(err as { code?: string }).code ?? (err as Error).name}`;
    h.errors[code] = (h.errors[code] ?? 0) + 1;
    return 'error';
  }
}

/** Buyer i: first request at its due time, then as the protocol says until a fate or giving up. */
async function buyer(h: Herd, i: number): Promise<BuyerRecord> {
  const { o } = h;
  const due = h.start + (i * o.spreadMs) / o.buyers;
  await sleep(Math.max(0, due - performance.now()));
  const rec: BuyerRecord = {
    firstAt: performance.now(),
    lastSentAt: 0,
    doneAt: 0,
    requests: 0,
    fate: 'error',
  };
  h.maxSendLagMs = Math.max(h.maxSendLagMs, rec.firstAt - due);
  const fate = await order(h, rec, `${o.userPrefix}-${i}`);
  rec.doneAt = performance.now();
  return { ...rec, fate };
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
