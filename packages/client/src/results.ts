// What placeOrder ends with (one typed result per final answer) and what it reports on the way
// (progress for a UI: the countdown to the opening, the place in line, retries).
import type { PlacedOrder } from './wire.ts';

/** The end of `placeOrder`: `outcome` says which; every other final answer throws an ApiError. */
export type PlaceOrderResult =
  /** `202`: the units are this buyer's. Pay by the sale's deadline if it has one (`client.order()` shows `payBy`). */
  | { outcome: 'ordered'; order: PlacedOrder }
  /** `409 sold_out`: nothing is left. */
  | { outcome: 'sold_out'; available: number }
  /** `409 insufficient_stock`: fewer units are left than asked for; `available` could still be bought. */
  | { outcome: 'insufficient_stock'; available: number }
  /** `409 limit_exceeded`: this buyer already has `limit` units of the sale. */
  | { outcome: 'limit_exceeded'; limit: number }
  /** `409 sale_ended`: the sale closed at `endsAt`. */
  | { outcome: 'sale_ended'; endsAt: Date }
  /** `404 unknown_product`: no sale of that product. */
  | { outcome: 'unknown_product' };

/** Why placeOrder waits before sending again. */
export type RetryReason =
  | 'busy'
  | 'rate_limited'
  | 'unavailable'
  | 'timeout'
  | 'network'
  | 'in_progress'
  | 'stream_closed';

/** What `onProgress` gets while placeOrder waits. */
export type Progress =
  /** `409 not_started`: waiting `waitMs` for the opening at `startsAt`, then sending again. */
  | { phase: 'waiting_for_start'; startsAt: Date; waitMs: number }
  /** In the waiting line: `position` buyers ahead, served in about `etaMs`, `available` units left. */
  | { phase: 'queued'; position: number; etaMs: number; available: number; streaming: boolean }
  /** Sending again after `delayMs` (attempt `attempt` of this kind in a row). */
  | { phase: 'retrying'; reason: RetryReason; delayMs: number; attempt: number }
  /** `503 outcome_unknown`: asking `GET /api/orders/:orderId` whether the order exists. */
  | { phase: 'settling'; orderId: string };
