// The service's wire format as this client reads it: request bodies, answers, error bodies, stream
// events. One file on purpose: it is meant to become a re-export of the types generated from the
// service's OpenAPI document (src/openapi.d.ts, `npm run gen:client-types`) once that lands.

/** The body of `POST /api/orders`. `userId` is the buyer under `BUYER_AUTH=none`; with a token it may be left out. */
export interface OrderRequest {
  productId: string;
  userId?: string;
  /** Units to buy; default 1, at most the service's `MAX_ORDER_QUANTITY` (default 100). */
  quantity?: number;
}

/** `202` to `POST /api/orders`: the units are sold to this buyer. */
export interface PlacedOrder {
  orderId: string;
  status: 'reserved';
  productId: string;
  userId: string;
  quantity: number;
}

/** An order's life: `reserved` → `confirmed` → `paid`, or `expired` / `cancelled`. */
export type OrderStatus = 'reserved' | 'confirmed' | 'paid' | 'expired' | 'cancelled';

/** `200` to `GET /api/orders/:orderId` (the buyer's view; the admin's has more fields). */
export interface OrderView {
  orderId: string;
  status: OrderStatus;
  productId: string;
  userId: string;
  quantity: number;
  /** The payment deadline, epoch ms of the service's clock, for a sale that needs payment. */
  payBy?: number;
}

/** `200` to `POST /api/orders/:orderId/pay` or `/cancel`. */
export interface FateAnswer {
  orderId: string;
  status: 'paid' | 'cancelled';
}

/** `200` to `GET /api/products/:productId`. */
export interface ProductView {
  productId: string;
  available: number;
  soldOut: boolean;
  /** ISO 8601: orders before it get `409 not_started`. */
  startsAt?: string;
  /** ISO 8601: orders after it get `409 sale_ended`. */
  endsAt?: string;
  /** Seconds an order has to be paid in; absent: no payment needed. */
  paymentTimeoutSec?: number;
  /** While a waiting line exists: buyers waiting, and how far behind now it serves. */
  queue?: { waiting: number; servingLagMs: number; [more: string]: unknown };
}

/** Every error answer: `{error, message, ...details}`. */
export interface ErrorBody {
  error: string;
  message: string;
  [detail: string]: unknown;
}

/** Where a queued buyer stands: a `queued` stream event, or a `429 queued` answer without `retryAfterMs`. */
export interface QueuedPlace {
  /** Come back with it (header `Queue-Ticket`) to keep the place. */
  ticket: string;
  /** Buyers ahead (an estimate). */
  position: number;
  /** When the service expects to serve this buyer, ms from now. */
  etaMs: number;
  /** Units still on sale. */
  available: number;
}

/** `429 queued`. */
export interface QueuedBody extends ErrorBody, QueuedPlace {
  error: 'queued';
  /** When to come back, ms from now (never sooner). */
  retryAfterMs: number;
}

/** The `result` event of a streamed order: the status and body the JSON answer would have had. */
export interface ResultEvent {
  status: number;
  body: PlacedOrder | ErrorBody;
}
