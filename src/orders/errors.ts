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

export class NotOwnerError extends FlashsaleError {
  constructor(orderId: string) {
    super('not_owner', `order "${orderId}" belongs to another buyer`, { orderId });
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
 * Redis became unreachable while a reservation was in flight and stayed so: the order may or may not
 * exist. Answered 503 like any outage, but the request's claims (Idempotency-Key, per-user limit) are
 * kept, so a retry with the same key learns what happened instead of ordering twice.
 */
/**
 * The order was reserved, but its master's replicas did not confirm it within REDIS_WAIT_TIMEOUT_MS
 * (REDIS_WAIT_REPLICAS): a failover now could lose it, so it is not acknowledged. It goes on to the
 * writer anyway and, if its master survives, is persisted: a retry with the same Idempotency-Key
 * answers that order.
 */
export class NotReplicatedError extends FlashsaleError {
  constructor(orderId: string) {
    super(
      'unavailable',
      'the order was reserved but not yet copied to a Redis replica; retry with the same Idempotency-Key to learn its outcome',
      { orderId },
    );
  }
}

export class OutcomeUnknownError extends FlashsaleError {
  constructor(cause: unknown) {
    super(
      'unavailable',
      'Redis became unreachable while the order was being placed; retry with the same Idempotency-Key to learn its outcome',
      {},
      { cause },
    );
  }
}
