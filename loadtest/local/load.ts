// The buyers: POST /api/orders driven by autocannon at a scheduled rate, every request a distinct
// user buying one unit (the user id comes from a counter in setupRequest, and doubles as the
// Idempotency-Key like the k6 scripts send), every answer sorted into the contract's outcomes.
//
// A phase is a list of segments (rate, seconds); ramps are one-second steps. autocannon limits
// rate per connection per one-second window, so a segment runs as up to ten autocannon instances
// started a tenth of a second apart: the arrivals of a second come in ten small bursts instead of
// one big one. Each instance is given an `amount` (rate x seconds), so it ends only after the
// answer to its last request: no request is cut off in flight, and every 202 the server sent is
// counted here. A service slower than the schedule makes a segment overrun (reported as lag)
// rather than dropping arrivals.
import { setTimeout as sleep } from 'node:timers/promises';
import autocannon from 'autocannon';
import { classifyAnswer, type Outcome } from '../contract.js';

export type { Outcome };

export interface Segment {
  /** Arrivals per second. */
  rate: number;
  seconds: number;
}

/** A ramp from `from` to `to` per second over `seconds`, as one-second steps (trapezoid total). */
export function ramp(from: number, to: number, seconds: number): Segment[] {
  const steps: Segment[] = [];
  const n = Math.max(1, Math.ceil(seconds));
  for (let i = 0; i < n; i++) {
    const len = Math.min(1, seconds - i);
    const mid = (i + len / 2) / seconds;
    steps.push({ rate: from + (to - from) * mid, seconds: len });
  }
  return steps;
}

/** The k6 herd: ramp to `rate`, the plateau, a 3 s ramp down (loadtest/lib.js herdStages). */
export function herd(rate: number, rampSec: number, plateauSec: number): Segment[] {
  return [...ramp(0, rate, rampSec), { rate, seconds: plateauSec }, ...ramp(rate, 0, 3)];
}

export const planned = (segments: Segment[]): number =>
  segments.reduce((sum, s) => sum + Math.round(s.rate * s.seconds), 0);
export const plannedSeconds = (segments: Segment[]): number =>
  segments.reduce((sum, s) => sum + s.seconds, 0);

/** Everything one phase of buyers saw. */
export class Recorder {
  readonly outcomes: Record<Outcome, number> = {
    accepted: 0,
    sold_out: 0,
    queued: 0,
    busy: 0,
    rate_limited: 0,
    unexpected: 0,
  };
  /** By HTTP status; 0 = no answer (connection error, timeout). */
  readonly statuses = new Map<number, number>();
  readonly reasons = new Map<string, number>();
  readonly samples: string[] = [];
  /** Latency (ms) of 202s and of 409s. */
  readonly acceptedMs: number[] = [];
  readonly soldOutMs: number[] = [];
  /** When each 202 arrived (ms since the run started), parallel to acceptedMs. */
  readonly acceptedAt: number[] = [];
  sent = 0;
  plannedRequests = 0;
  plannedSec = 0;
  elapsedSec = 0;

  constructor(
    readonly name: string,
    readonly epoch: number,
  ) {}

  get answered(): number {
    return Object.values(this.outcomes).reduce((a, b) => a + b, 0);
  }

  status(code: number): void {
    this.statuses.set(code, (this.statuses.get(code) ?? 0) + 1);
  }

  unexpected(reason: string, detail: string): void {
    this.outcomes.unexpected += 1;
    this.reasons.set(reason, (this.reasons.get(reason) ?? 0) + 1);
    if (this.samples.length < 5) this.samples.push(`${reason}: ${detail.slice(0, 300)}`);
  }
}

interface Ctx {
  userId?: string;
}

/** Sorts an answer of POST /api/orders into the contract's outcomes, as the k6 scripts do (contract.js). */
export function classify(
  status: number,
  text: string,
  headers: Record<string, unknown>,
  productId: string,
  userId: string | undefined,
): { outcome: Outcome; reason: string } {
  let body: Record<string, unknown> | null = null;
  try {
    const parsed: unknown = JSON.parse(text);
    if (parsed !== null && typeof parsed === 'object' && !Array.isArray(parsed))
      body = parsed as Record<string, unknown>;
  } catch {
    body = null;
  }
  const retryAfter = Object.entries(headers).find(([k]) => k.toLowerCase() === 'retry-after')?.[1];
  return classifyAnswer(status, body, retryAfter, productId, userId);
}

export interface BuyerOptions {
  baseUrl: string;
  productId: string;
  /** Prefix of the user ids (run id and phase), like k6's `${runId}-${scenario}-${iteration}`. */
  userPrefix: string;
  idempotency: boolean;
  /** Connections per 1/s of rate: each connection is asked for at most 1/this requests a second. */
  connections?: number;
  signal?: AbortSignal;
}

/** Runs one phase of buyers through its segments, recording into `rec`. */
export async function buyers(segments: Segment[], o: BuyerOptions, rec: Recorder): Promise<void> {
  rec.plannedRequests += planned(segments);
  rec.plannedSec += plannedSeconds(segments);
  const started = performance.now();
  let due = started;
  for (const segment of segments) {
    if (o.signal?.aborted) break;
    due += segment.seconds * 1000;
    const amount = Math.round(segment.rate * segment.seconds);
    if (amount > 0) await runSegment(segment, amount, o, rec);
    const rest = due - performance.now();
    if (rest > 0) await sleep(rest, undefined, { signal: o.signal }).catch(() => {});
  }
  rec.elapsedSec += (performance.now() - started) / 1000;
}

async function runSegment(segment: Segment, amount: number, o: BuyerOptions, rec: Recorder): Promise<void> {
  const rate = amount / segment.seconds;
  // About four requests per connection per second: a connection keeps up while answers take
  // under ~250 ms (k6's P95 bound); slower answers delay the schedule (reported as lag).
  const connections = Math.max(1, Math.min(o.connections ?? Math.ceil(rate / 4), amount));
  const groups = Math.max(1, Math.min(10, connections));
  const runs: Promise<void>[] = [];
  for (let g = 0; g < groups; g++) {
    const share = (total: number) => Math.floor(total / groups) + (g < total % groups ? 1 : 0);
    const gAmount = share(amount);
    if (gAmount === 0) continue;
    const gConnections = Math.max(1, Math.min(share(connections), gAmount));
    // Every connection of the group gets the same per-second allowance, enough for its share of
    // the amount within the segment; the amount, not the allowance, bounds what is sent.
    const perConnection = Math.max(1, Math.ceil(gAmount / gConnections / segment.seconds));
    runs.push(
      sleep((g * 1000) / groups).then(() =>
        o.signal?.aborted ? undefined : fire(gAmount, perConnection, gConnections, o, rec),
      ),
    );
  }
  await Promise.all(runs);
}

/** The order request of autocannon: every order a new buyer, its answer classified by the contract. */
function orderRequest(o: BuyerOptions, rec: Recorder): autocannon.Request {
  return {
    setupRequest: (req, context) => {
      // The recorder's count makes the user ids distinct within the phase (its prefix names it).
      rec.sent += 1;
      const userId = `${o.userPrefix}-${rec.sent}`;
      (context as Ctx).userId = userId;
      const headers: Record<string, string> = { 'content-type': 'application/json' };
      if (o.idempotency) headers['idempotency-key'] = userId;
      return { ...req, headers, body: JSON.stringify({ productId: o.productId, userId, quantity: 1 }) };
    },
    onResponse: (status, body, context, headers) => {
      rec.status(status);
      const text = String(body ?? '');
      const answer = (headers ?? {}) as Record<string, unknown>;
      const { outcome, reason } = classify(status, text, answer, o.productId, (context as Ctx).userId);
      if (outcome === 'unexpected') rec.unexpected(reason, `${status} ${text}`);
      else rec.outcomes[outcome] += 1;
    },
  };
}

/** Latencies of the 202s and 409s, and the requests that got no answer; `settle` after each. */
function record(instance: autocannon.Instance, rec: Recorder, settle: () => void): void {
  instance.on('response', (_client, statusCode, _bytes, ms) => {
    if (statusCode === 202) {
      rec.acceptedMs.push(ms);
      rec.acceptedAt.push(Date.now() - rec.epoch);
    } else if (statusCode === 409) {
      rec.soldOutMs.push(ms);
    }
    settle();
  });
  instance.on('reqError', (err: Error) => {
    rec.status(0);
    rec.unexpected(/timed out/.test(String(err?.message)) ? 'timeout' : 'network_error', String(err));
    settle();
  });
}

function fire(
  amount: number,
  perConnection: number,
  connections: number,
  o: BuyerOptions,
  rec: Recorder,
): Promise<void> {
  return new Promise((resolve, reject) => {
    // autocannon notices that a rate-limited connection has sent its share only at its next
    // one-second window; the answers are counted here instead, so a segment ends with its last answer.
    let settled = 0;
    let finished = false;
    const finish = (err?: Error) => {
      if (finished) return;
      finished = true;
      o.signal?.removeEventListener('abort', stop);
      if (err) reject(err);
      else resolve();
    };
    const instance = autocannon(
      {
        url: `${o.baseUrl}/api/orders`,
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        connections,
        connectionRate: perConnection,
        amount,
        timeout: 30,
        requests: [orderRequest(o, rec)],
      },
      (err) => finish(err ?? undefined),
    );
    const stop = () => instance.stop();
    o.signal?.addEventListener('abort', stop, { once: true });
    record(instance, rec, () => {
      settled += 1;
      if (settled < amount) return;
      instance.stop();
      finish();
    });
  });
}

/** The q-th percentile (0..100) of ms, nearest-rank; undefined when empty. */
export function percentile(sorted: number[], q: number): number | undefined {
  if (sorted.length === 0) return undefined;
  const rank = Math.min(sorted.length - 1, Math.max(0, Math.ceil((q / 100) * sorted.length) - 1));
  return sorted[rank];
}
