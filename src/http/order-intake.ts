// POST /api/orders once the order door read it (or a held buyer's turn came): the order validated, its
// Idempotency-Key checked, the order gate passed, the refusals known from memory, then the use case.
import { type OrderOutcome, orderOutcome } from '../metrics.ts';
import type { OrderRequest, PlacedOrder, PlaceOrder } from '../orders/place-order.ts';
import type { Release } from './admission.ts';
import { accepted, failureAnswer } from './answers.ts';
import type { Answer } from './errors.ts';
import type { OrderGate } from './order-gate.ts';
import { idempotencyKeyHeader, orderBody, parse } from './validation.ts';

/** An order request as read: the body (its buyer bound when authenticated) and the headers that count. */
export interface OrderCall {
  body: unknown;
  /** Headers as sent (validated here). */
  idempotencyKey: string | undefined;
  ticket: string | undefined;
  /** The client's address (req.ip, after TRUST_PROXY), for the per-address rate limit: asked only then. */
  address: () => string | undefined;
  /** How long ago the request was read: a first request's place in the waiting line is then. */
  waitedMs: number;
  /**
   * A buyer held on its stream whose turn came (StreamHolder): placed by the service, not a new
   * request of the buyer's, so the rate limits do not count it again.
   */
  held?: boolean;
  /** The buyer asked for a stream and one can be held: told at once where it stands, not kept silently waiting. */
  streams?: boolean;
}

/** What POST /api/orders answers, and the outcome it is counted by. */
export interface OrderAnswer {
  answer: Answer;
  outcome: OrderOutcome;
}

/** An order let on to the use case: run it under `key`, and release its slot once answered. */
interface AdmittedOrder {
  order: OrderRequest;
  /** The Idempotency-Key, else the ticket's key (a ticket that placed an order answers that order). */
  key: string | undefined;
  release: Release;
}

/**
 * POST /api/orders after its request was read. Every check an order passes before the order use case
 * runs, in the order the contract answers them:
 * 400 invalid_request (body, Idempotency-Key), then the gate (429 rate_limited / queued / busy, 400
 * invalid_ticket), then what this process knows from memory (409 not_started / sale_ended /
 * sold_out). Throws the refusal; a refused order holds no slot and touched nothing.
 *
 * @example
 * const intake = new OrderIntake({ gate, orders, maxOrderQuantity: 10 });
 * const { answer, outcome } = await intake.answer(
 *   () => ({ body, idempotencyKey, ticket, address: () => req.ip, waitedMs: 0 }),
 *   (err) => log.error({ err }, 'unexpected error'),
 * );
 */
export class OrderIntake {
  private readonly schema: ReturnType<typeof orderBody>;

  constructor(private readonly o: { gate: OrderGate; orders: PlaceOrder; maxOrderQuantity: number }) {
    this.schema = orderBody(o.maxOrderQuantity);
  }

  /** The checks above; throws the refusal. */
  private async admit(call: OrderCall): Promise<AdmittedOrder> {
    const order = parse(this.schema, call.body);
    const idempotencyKey =
      call.idempotencyKey === undefined
        ? undefined
        : parse(idempotencyKeyHeader, call.idempotencyKey, 'Idempotency-Key');
    const entry = await this.o.gate.enter(order, call.address, call.ticket, call.waitedMs, {
      limited: !call.held,
      patient: call.held === true || !call.streams,
    });
    const key = idempotencyKey ?? (entry.ticketId === undefined ? undefined : `ticket:${entry.ticketId}`);
    const refused = this.o.orders.refusalFromMemory(order, key);
    if (refused) {
      entry.release();
      throw refused;
    }
    return { order, key, release: entry.release };
  }

  /**
   * The whole order, as the order door read it or a held stream's turn came: `read` gives the
   * call (it may throw a refusal: a body not JSON, a buyer mismatch), then admit, then the use case.
   * Never throws: a failure of no known status is answered 500 after `unexpected` heard it.
   */
  async answer(
    read: () => OrderCall | Promise<OrderCall>,
    unexpected: (err: unknown) => void,
  ): Promise<OrderAnswer> {
    try {
      const placed = await this.run(await this.admit(await read()));
      return { answer: accepted(placed), outcome: placed.replayed ? 'replayed' : 'accepted' };
    } catch (err) {
      const answer = failureAnswer(err, () => unexpected(err));
      return { answer, outcome: orderOutcome(answer.status, answer.body.error) };
    }
  }

  /** Runs the use case for an admitted order under its key, and frees its slot once it is decided. */
  private async run(entry: AdmittedOrder): Promise<PlacedOrder> {
    try {
      return await this.o.orders.place(entry.order, { idempotencyKey: entry.key });
    } finally {
      entry.release();
    }
  }
}
