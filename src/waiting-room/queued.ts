// The 429 queued answer of a buyer who cannot be served now: its place, its ETA, and when to come
// back (within bounds, spread so that buyers refused together do not return as one wave).
import { QueuedError } from './errors.ts';
import type { Buyer, WaitingLine } from './line.ts';
import { MAX_RETRY_MS } from './returns.ts';

/** Waiting buyers come back at the earliest this soon (at the latest: MAX_RETRY_MS). */
const MIN_RETRY_MS = 250;
/** The ETA of a line whose pace is not measured yet (its first tick): a second, not the maximum. */
const UNKNOWN_ETA_MS = 1000;

/**
 * The answer for `buyer`, holding `ticket`, in `line` at `now` (Redis' clock), its ETA at the line's pace or at `pace`
 * (buyers per second this process has shown) when that is faster.
 */
export function queuedAnswer(
  buyer: Buyer & { productId: string },
  ticket: string,
  line: WaitingLine,
  now: number,
  pace: number,
): QueuedError {
  const { position, etaMs } = line.lets(buyer, now) ? { position: 0, etaMs: 0 } : line.standing(buyer, pace);
  // In a lottery window nobody is served before the draw: come back once it has closed.
  const drawMs = line.drawing(now) ? (line.draw?.closesAt ?? now) - now : 0;
  const finite = Math.max(drawMs, Number.isFinite(etaMs) ? etaMs : UNKNOWN_ETA_MS);
  return new QueuedError(
    buyer.productId,
    {
      ticket,
      position,
      etaMs: finite,
      retryAfterMs: Math.max(drawMs, retryAfter(finite)),
      available: Number.isFinite(line.available) ? line.available : 0,
    },
    drawMs,
  );
}

/**
 * When to come back: at the ETA, within bounds. A buyer let in but refused by admission control
 * (ETA 0) is spread over a few MIN_RETRY_MS, so that such buyers do not return as one wave.
 */
function retryAfter(etaMs: number): number {
  const spread = etaMs < MIN_RETRY_MS ? MIN_RETRY_MS * 2 * Math.random() : 0;
  return Math.round(Math.min(MAX_RETRY_MS, Math.max(MIN_RETRY_MS, etaMs) + spread));
}
