// Order-intake errors beyond the inventory's own.
import { FlashsaleError } from '../errors.ts';

export class LimitExceededError extends FlashsaleError {
  /** An expected answer: no stack trace (see CodedError). */
  static readonly refusal = true;

  constructor(productId: string, limit: number) {
    super('limit_exceeded', `at most ${limit} units of "${productId}" per user`, { productId, limit });
  }
}

export class IdempotencyKeyReusedError extends FlashsaleError {
  constructor() {
    super('idempotency_key_reused', 'this Idempotency-Key was used with a different request body');
  }
}

export class RequestInProgressError extends FlashsaleError {
  constructor() {
    super(
      'request_in_progress',
      'a request with this Idempotency-Key is still being processed; retry shortly',
    );
  }
}

export class UnknownOrderError extends FlashsaleError {
  constructor(orderId: string) {
    super('unknown_order', `no order "${orderId}"`, { orderId });
  }
}

export class OrderExpiredError extends FlashsaleError {
  constructor(orderId: string) {
    super('order_expired', `order "${orderId}" was not paid in time; its units went back on sale`, {
      orderId,
    });
  }
}

export class OrderCancelledError extends FlashsaleError {
  constructor(orderId: string) {
    super('order_cancelled', `order "${orderId}" was cancelled; its units went back on sale`, { orderId });
  }
}

export class AlreadyPaidError extends FlashsaleError {
  constructor(orderId: string) {
    super('already_paid', `order "${orderId}" is paid and can no longer be cancelled`, { orderId });
  }
}

/**
 * The order was reserved but its master's replicas did not confirm it in time (REDIS_WAIT_REPLICAS):
 * it was withdrawn (a durable tombstone in Postgres, its units given back), so nothing was sold and a
 * plain retry may order again. Its claims (Idempotency-Key, per-user limit) are released.
 */
export class NotReplicatedError extends FlashsaleError {
  constructor(orderId: string) {
    super(
      'unavailable',
      'the Redis replicas did not confirm the order in time, so it was withdrawn: nothing was sold; retry shortly',
      { withdrawnOrderId: orderId },
    );
  }
}

/**
 * The service cannot know whether the order exists: Redis went silent after the decrement may have
 * run, or a withdrawal could not be confirmed. `orderId` is the id the order has if it exists;
 * `GET /api/orders/:orderId` settles it (the order, or 404 once certain there is none) within
 * seconds. The request's claims (Idempotency-Key, per-user limit) are kept, so a retry with the same
 * key answers that same order.
 */
export class OutcomeUnknownError extends FlashsaleError {
  constructor(orderId: string, cause?: unknown) {
    super(
      'outcome_unknown',
      'the service cannot tell yet whether this order was placed; GET /api/orders/{orderId} settles it within seconds, or retry with the same Idempotency-Key',
      { orderId },
      { cause },
    );
  }
}
