// The crowd of the bench's herd phase: buyers whose first orders are spread evenly over a window,
// each then following the order protocol through @flashsale/client (polling: 429 queued → come back
// after retryAfterMs with its Queue-Ticket; 429 busy or rate_limited → back off, exponential, jittered,
// never sooner than Retry-After; 409 or 202 → done), given up giveUpMs after its first request.
// Every try keeps the buyer's Idempotency-Key.
//
// One undici Pool (as open-load.ts: the generator's own CPU is taken from the service it measures),
// every latency counted from when the buyer sent the request, so time waiting for a free socket here
// counts too. Each buyer's first-request time and fate are kept for the fairness figures.
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import { FlashsaleClient, type Progress } from '@flashsale/client';
import { Pool, fetch as undiciFetch } from 'undici';

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
    const rec: BuyerRecord = {
      firstAt: performance.now(),
      lastSentAt: 0,
      doneAt: 0,
      requests: 0,
      fate: 'error',
    };
    maxSendLagMs = Math.max(maxSendLagMs, rec.firstAt - due);
    const tally = (key: string) => {
      answers[key] = (answers[key] ?? 0) + 1;
      count(key, rec.requests === 1);
    };
    // Every request through the pool, its latency counted from its send; one without an answer is
    // counted by its error code (the client sends it again under the same key).
    const viaPool = async (input: string | URL | Request, init?: RequestInit) => {
      const sent = performance.now();
      rec.lastSentAt = sent;
      rec.requests += 1;
      try {
        const res = await undiciFetch(input as string, { ...(init as object), dispatcher: pool });
        latencies.push(performance.now() - sent);
        return res as unknown as Response;
      } catch (err) {
        const e = err as NodeJS.ErrnoException & { cause?: NodeJS.ErrnoException };
        const code = e.cause?.code ?? e.code ?? e.message;
        errors[code] = (errors[code] ?? 0) + 1;
        throw err;
      }
    };
    const client = new FlashsaleClient({ baseUrl: o.url, userId, fetch: viaPool, stream: false });
    const onProgress = (p: Progress) => {
      const key = ANSWER_OF[p.phase === 'retrying' ? `retrying:${p.reason}` : p.phase];
      if (key) tally(key);
    };
    const signal = AbortSignal.timeout(o.giveUpMs);
    const fate = await client
      .placeOrder({ productId: o.productId, quantity: 1 }, { signal, onProgress, idempotencyKey: userId })
      .then((r): Fate => {
        tally(r.outcome === 'ordered' ? '202' : `409 ${r.outcome}`);
        return r.outcome === 'ordered' ? 'accepted' : r.outcome === 'sold_out' ? 'sold_out' : 'error';
      })
      .catch((err: Error & { code?: string }): Fate => {
        if (signal.aborted) return 'gave_up';
        errors[`client ${err.code ?? err.name}`] = (errors[`client ${err.code ?? err.name}`] ?? 0) + 1;
        return 'error';
      });
    rec.doneAt = performance.now();
    return { ...rec, fate };
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
