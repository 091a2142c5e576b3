// FlashsaleClient: the buyer's API of a flashsale service (order, its status, pay, cancel, the
// product), with placeOrder following the whole ordering protocol.
import { ApiError } from './errors.ts';
import { OrderRun } from './order-run.ts';
import type { PlaceOrderResult, Progress } from './results.ts';
import { type RetryOptions, retryWith } from './timing.ts';
import { type Answer, type ClientOptions, errorBody, Transport } from './transport.ts';
import type { FateAnswer, OrderRequest, OrderView, ProductView } from './wire.ts';

export interface FlashsaleClientOptions extends ClientOptions {
  /** Ask for streaming admission (`Accept: text/event-stream`); the service may still answer JSON. Default true. */
  stream?: boolean;
  /** Spacing of placeOrder's retries. Defaults: 250 ms doubling to 30 s, 30 attempts in a row. */
  retry?: RetryOptions;
}

export interface PlaceOrderOptions {
  /** Aborts the order: placeOrder rejects with the signal's reason and leaves the line. Default none. */
  signal?: AbortSignal;
  /** Called on every wait: the countdown to the opening, the place in line, a retry. Default none. */
  onProgress?: (progress: Progress) => void;
  /** The order's Idempotency-Key. Default: a fresh `crypto.randomUUID()` per placeOrder call. */
  idempotencyKey?: string;
}

export interface CallOptions {
  /** Aborts the request. Default none. */
  signal?: AbortSignal;
  /** Headers of this request only (e.g. a payment provider's signature on pay). Default none. */
  headers?: Record<string, string>;
}

/**
 * The buyer's API. placeOrder retries as the protocol says; order, pay, cancel and product are one
 * request each, which a caller may repeat (pay and cancel answer the same when repeated).
 */
export class FlashsaleClient {
  private readonly t: Transport;

  /**
   * @param options where the service is and who the buyer is (`userId` under `BUYER_AUTH=none`,
   *   `token` under `jwt`); all optional: in a browser the default is this page's origin, no identity.
   * @example
   * const client = new FlashsaleClient({ baseUrl: 'http://127.0.0.1:3000', userId: 'alice' });
   */
  constructor(private readonly options: FlashsaleClientOptions = {}) {
    this.t = new Transport(options);
  }

  /**
   * Orders `quantity` units of `productId` and follows the protocol to a final answer: streams when the
   * service offers it, else polls with its `Queue-Ticket` after `retryAfterMs`; waits for the opening on
   * `409 not_started`; retries `429 busy`/`rate_limited`, `503 unavailable` and network errors with
   * jittered doubling backoff (never sooner than `Retry-After`) under one Idempotency-Key, so a retry
   * never orders twice; settles `503 outcome_unknown` with `GET /api/orders/:orderId`.
   *
   * @returns the outcome: `ordered`, `sold_out`, `insufficient_stock`, `limit_exceeded`, `sale_ended`
   *   or `unknown_product`.
   * @throws ApiError for any other final answer (bad request, missing token, …); UnreachableError after
   *   `retry.maxAttempts` unanswered attempts in a row; the signal's reason when aborted.
   * @example
   * const result = await client.placeOrder({ productId: 'p1', quantity: 2 }, {
   *   onProgress: (p) => p.phase === 'queued' && console.log(`${p.position} ahead, ${p.available} left`),
   * });
   * if (result.outcome === 'ordered') console.log(result.order.orderId);
   */
  placeOrder(request: OrderRequest, options: PlaceOrderOptions = {}): Promise<PlaceOrderResult> {
    return new OrderRun(this.t, request, {
      signal: options.signal,
      onProgress: options.onProgress,
      idempotencyKey: options.idempotencyKey ?? crypto.randomUUID(),
      stream: this.options.stream ?? true,
      retry: retryWith(this.options.retry),
    }).result();
  }

  /**
   * The order's state now (`GET /api/orders/:orderId`), with `payBy` when it must be paid.
   * @throws ApiError `404 unknown_order` (also someone else's order under a token).
   * @example
   * const { status, payBy } = await client.order(orderId);
   */
  async order(orderId: string, options: CallOptions = {}): Promise<OrderView> {
    return this.ok(await this.t.exchange({ method: 'GET', path: orderPath(orderId), ...options }));
  }

  /**
   * Pays the order (`POST /api/orders/:orderId/pay`); paying again answers the same. Where the
   * deployment sets `PAYMENT_WEBHOOK_SECRET` only the payment provider may: pass its signature headers.
   * @throws ApiError `409 order_expired` / `order_cancelled`, `403 not_owner`, `404 unknown_order`, `401 invalid_signature`.
   * @example
   * await client.pay(orderId); // { orderId, status: 'paid' }
   */
  async pay(orderId: string, options: CallOptions = {}): Promise<FateAnswer> {
    return this.fate(orderId, 'pay', options);
  }

  /**
   * Cancels the order (`POST /api/orders/:orderId/cancel`): its units go back on sale; cancelling
   * again answers the same.
   * @throws ApiError `409 already_paid` / `order_expired`, `403 not_owner`, `404 unknown_order`.
   * @example
   * await client.cancel(orderId); // { orderId, status: 'cancelled' }
   */
  async cancel(orderId: string, options: CallOptions = {}): Promise<FateAnswer> {
    return this.fate(orderId, 'cancel', options);
  }

  /**
   * The sale as a buyer sees it (`GET /api/products/:productId`): units left, its window, the line.
   * @throws ApiError `404 unknown_product`.
   * @example
   * const { available, soldOut, startsAt } = await client.product('p1');
   */
  async product(productId: string, options: CallOptions = {}): Promise<ProductView> {
    const path = `/api/products/${encodeURIComponent(productId)}`;
    return this.ok(await this.t.exchange({ method: 'GET', path, ...options }));
  }

  private async fate(orderId: string, action: 'pay' | 'cancel', options: CallOptions): Promise<FateAnswer> {
    const path = `${orderPath(orderId)}/${action}`;
    const body = this.t.withBuyer({});
    return this.ok(await this.t.exchange({ method: 'POST', path, body, ...options }));
  }

  private ok<T>(answer: Answer): T {
    if (answer.status !== 200) throw new ApiError(answer.status, errorBody(answer));
    return answer.body as T;
  }
}

function orderPath(orderId: string): string {
  return `/api/orders/${encodeURIComponent(orderId)}`;
}
