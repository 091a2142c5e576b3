// One buyer's order from first request to final answer: the service's whole protocol (waiting
// room, streaming admission, the sale's opening, retries under one Idempotency-Key, outcome_unknown).
import { ApiError, ProtocolError, UnreachableError } from './errors.ts';
import type { PlaceOrderResult, Progress, RetryReason } from './results.ts';
import { isEventStream, readEvents } from './stream.ts';
import { backoff, type Retry, retryAfterMs, sleep } from './timing.ts';
import { type Answer, errorBody, read, type Transport } from './transport.ts';
import type { OrderRequest, PlacedOrder, QueuedBody, QueuedPlace } from './wire.ts';

export interface RunOptions {
  signal?: AbortSignal;
  onProgress?: (progress: Progress) => void;
  idempotencyKey: string;
  stream: boolean;
  retry: Retry;
}

/** What to do after an answer: stop with a result, or wait and send (or settle) again. */
type Step = Next | { settle: string };
type Next = { done: PlaceOrderResult } | { waitMs: number; progress?: Progress };

/** Longest single wait for a sale's opening before asking again (clocks drift, sales move). */
const MAX_START_WAIT_MS = 60_000;
/** Spread of the wake-up at the opening, so a herd waiting for it does not arrive in one instant. */
const START_SPREAD_MS = 200;

export class OrderRun {
  private ticket: string | undefined;
  private retries = 0;
  private lastFailure = '';

  constructor(
    private readonly t: Transport,
    private readonly request: OrderRequest,
    private readonly o: RunOptions,
  ) {}

  /** Sends until a final answer; throws ApiError, UnreachableError, or the signal's reason. */
  async result(): Promise<PlaceOrderResult> {
    for (;;) {
      this.o.signal?.throwIfAborted();
      const answer = await this.attempt();
      const first = typeof answer === 'string' ? this.failed(answer, 0) : this.step(answer);
      const step = 'settle' in first ? await this.settle(first.settle) : first;
      if ('done' in step) return step.done;
      if (step.progress) this.o.onProgress?.(step.progress);
      await sleep(step.waitMs, this.o.signal);
    }
  }

  /** One POST: its JSON answer (or a stream's result), or why no answer came. */
  private async attempt(): Promise<Answer | 'network' | 'stream_closed'> {
    const headers: Record<string, string> = { 'idempotency-key': this.o.idempotencyKey };
    if (this.ticket) headers['queue-ticket'] = this.ticket;
    // Exactly the contract's header; the service answers JSON whenever the order is decided at once.
    if (this.o.stream) headers.accept = 'text/event-stream';
    try {
      const res = await this.t.send({
        method: 'POST',
        path: '/api/orders',
        body: this.t.withBuyer(this.request),
        headers,
        signal: this.o.signal,
      });
      if (!isEventStream(res)) return await read(res);
      const result = await readEvents(res, (place) => this.queued(place, true));
      this.o.signal?.throwIfAborted(); // an abort ends the stream too: not a stream to come back to
      if (!result) this.lastFailure = 'the event stream ended before its result';
      return result
        ? { status: result.status, headers: undefined, body: { ...result.body } }
        : 'stream_closed';
    } catch (err) {
      if (this.o.signal?.aborted) throw this.o.signal.reason;
      if (err instanceof ProtocolError) throw err;
      this.lastFailure = String(err);
      return 'network';
    }
  }

  /** Keeps the place and tells the UI where it is. */
  private queued(place: QueuedPlace, streaming: boolean): void {
    this.ticket = place.ticket;
    this.retries = 0;
    const { position, etaMs, available } = place;
    this.o.onProgress?.({ phase: 'queued', position, etaMs, available, streaming });
  }

  private step(answer: Answer): Step {
    const b = answer.body;
    if (answer.status === 202) return { done: { outcome: 'ordered', order: b as unknown as PlacedOrder } };
    if (answer.status === 409) return this.refused(answer);
    if (answer.status === 404 && b.error === 'unknown_product')
      return { done: { outcome: 'unknown_product' } };
    if (answer.status === 429 && b.error === 'queued') {
      const queued = b as QueuedBody;
      this.queued(queued, false);
      return { waitMs: queued.retryAfterMs ?? retryAfterMs(answer.headers) };
    }
    if (answer.status === 429 && b.error !== 'too_many_attempts')
      return this.failed(
        b.error === 'rate_limited' ? 'rate_limited' : 'busy',
        retryAfterMs(answer.headers),
        answer,
      );
    // 408: the request did not reach the service whole (a stalled link): nothing was done.
    if (answer.status === 408) return this.failed('timeout', retryAfterMs(answer.headers), answer);
    if (answer.status === 503 && b.error === 'outcome_unknown' && typeof b.orderId === 'string')
      return { settle: b.orderId };
    // 503 unavailable (nothing sold), or a 5xx of a proxy in front: the key makes sending again safe.
    if (answer.status >= 500) return this.failed('unavailable', retryAfterMs(answer.headers), answer);
    throw new ApiError(answer.status, errorBody(answer));
  }

  /** A 409: the sale's final word, or "not yet" (wait for the opening) or "in progress" (wait). */
  private refused(answer: Answer): Step {
    const b = answer.body;
    const available = Number(b.available ?? 0);
    switch (b.error) {
      case 'sold_out':
        return { done: { outcome: 'sold_out', available } };
      case 'insufficient_stock':
        return { done: { outcome: 'insufficient_stock', available } };
      case 'limit_exceeded':
        return { done: { outcome: 'limit_exceeded', limit: Number(b.limit) } };
      case 'sale_ended':
        return { done: { outcome: 'sale_ended', endsAt: new Date(String(b.endsAt)) } };
      case 'not_started':
        return this.untilStart(new Date(String(b.startsAt)));
      case 'request_in_progress':
        return this.failed('in_progress', 0, answer);
      default:
        throw new ApiError(answer.status, errorBody(answer));
    }
  }

  /** Waits for the opening (by this machine's clock; a clock behind is told not_started again). */
  private untilStart(startsAt: Date): Next {
    const waitMs = Math.max(0, startsAt.getTime() - Date.now());
    const progress: Progress = { phase: 'waiting_for_start', startsAt, waitMs };
    const floor = waitMs === 0 ? this.o.retry.baseDelayMs / 2 : 0;
    return {
      waitMs: Math.min(MAX_START_WAIT_MS, waitMs + floor + Math.random() * START_SPREAD_MS),
      progress,
    };
  }

  /** Another retry in a row: its backoff, or UnreachableError past the budget. */
  private failed(reason: RetryReason, floorMs: number, answer?: Answer): Next {
    if (answer) this.lastFailure = `${answer.status} ${String(answer.body.error)}`;
    this.retries += 1;
    if (this.retries >= this.o.retry.maxAttempts) throw new UnreachableError(this.retries, this.lastFailure);
    const delayMs = backoff(this.o.retry, this.retries, floorMs);
    return { waitMs: delayMs, progress: { phase: 'retrying', reason, delayMs, attempt: this.retries } };
  }

  /**
   * 503 outcome_unknown: GET /api/orders/:orderId until it tells. 200: the order exists (ordered);
   * 404: it does not, for good, so the next POST (same key) orders afresh.
   */
  private async settle(orderId: string): Promise<Next> {
    this.o.onProgress?.({ phase: 'settling', orderId });
    for (let asked = 1; ; asked++) {
      const answer = await this.t
        .exchange({
          method: 'GET',
          path: `/api/orders/${encodeURIComponent(orderId)}`,
          signal: this.o.signal,
        })
        .catch(() => {
          if (this.o.signal?.aborted) throw this.o.signal.reason;
          return undefined;
        });
      if (answer?.status === 200) {
        const { productId, userId, quantity } = answer.body as unknown as PlacedOrder;
        return {
          done: { outcome: 'ordered', order: { orderId, status: 'reserved', productId, userId, quantity } },
        };
      }
      if (answer?.status === 404) return { waitMs: 0 };
      if (answer && answer.status < 500) throw new ApiError(answer.status, errorBody(answer));
      if (asked >= this.o.retry.maxAttempts) throw new UnreachableError(asked, `settling ${orderId}`);
      await sleep(backoff(this.o.retry, asked), this.o.signal);
    }
  }
}
