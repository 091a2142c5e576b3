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
import { Pool } from 'undici';

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

/** Runs the herd until every buyer has its fate. */
export async function herdLoad(o: HerdLoadOptions): Promise<HerdLoadResult> {
  const pool = new Pool(o.url, {
    connections: o.connections,
    headersTimeout: o.timeoutMs,
    bodyTimeout: o.timeoutMs,
    keepAliveTimeout: 60_000,
  });
  const latencies: number[] = [];
  const answers: Record<string, number> = {};
  const errors: Record<string, number> = {};
  let maxSendLagMs = 0;
  const start = performance.now() + 50;
  const timeline: Array<Record<string, number>> = [];
  const count = (key: string, first: boolean) => {
    const second = Math.max(0, Math.floor((performance.now() - start) / 1000));
    for (let i = timeline.length; i <= second; i++) timeline.push({});
    const bin = timeline[second] as Record<string, number>;
    bin[key] = (bin[key] ?? 0) + 1;
    if (first) bin.first = (bin.first ?? 0) + 1;
  };

  const buyer = async (i: number): Promise<BuyerRecord> => {
    const due = start + (i * o.spreadMs) / o.buyers;
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
    maxSendLagMs = Math.max(maxSendLagMs, rec.firstAt - due);
    for (let busy = 0; ; ) {
      const sent = performance.now();
      rec.lastSentAt = sent;
      rec.requests += 1;
      let step: Next;
      try {
        const res = await pool.request({ path: '/api/orders', method: 'POST', headers, body });
        const answer = (await res.body.json().catch(() => ({}))) as Record<string, unknown>;
        latencies.push(performance.now() - sent);
        const key = res.statusCode === 202 ? '202' : `${res.statusCode} ${String(answer.error)}`;
        answers[key] = (answers[key] ?? 0) + 1;
        count(key, rec.requests === 1);
        step = next(res.statusCode, answer, res.headers['retry-after'], busy);
      } catch (err) {
        const e = err as NodeJS.ErrnoException & { cause?: NodeJS.ErrnoException };
        const code = e.cause?.code ?? e.code ?? e.message;
        errors[code] = (errors[code] ?? 0) + 1;
        step = { fate: 'error' };
      }
      rec.doneAt = performance.now();
      if ('fate' in step) return { ...rec, fate: step.fate };
      if (step.ticket) headers['queue-ticket'] = step.ticket;
      else busy += 1;
      if (performance.now() + step.waitMs - rec.firstAt > o.giveUpMs) return { ...rec, fate: 'gave_up' };
      await sleep(step.waitMs);
    }
  };

  const buyers = await Promise.all(Array.from({ length: o.buyers }, (_, i) => buyer(i)));
  await pool.close();
  return {
    buyers,
    latencies: Float64Array.from(latencies),
    answers,
    errors,
    unknown: Object.values(errors).reduce((a, b) => a + b, 0),
    accepted: answers['202'] ?? 0,
    maxSendLagMs,
    timeline,
  };
}
