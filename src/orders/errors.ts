// Order-intake errors beyond the inventory's own.
import { FlashsaleError } from '../errors.ts';

export class LimitExceededError extends FlashsaleError {
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
