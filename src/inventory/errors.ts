// Inventory errors: what an order or an admin change can run into, as typed codes.
import { FlashsaleError } from '../errors.ts';

export class UnknownProductError extends FlashsaleError {
  constructor(productId: string) {
    super('unknown_product', `no sale for product "${productId}"`, { productId });
  }
}

export class SoldOutError extends FlashsaleError {
  constructor(productId: string, quantity: number, available: number) {
    super(
      'sold_out',
      available > 0
        ? `no shard of "${productId}" holds ${quantity} units (${available} left in smaller lots)`
        : `"${productId}" is sold out`,
      { productId, available },
    );
  }
}

/**
 * The order cannot be served now (its shard lock stayed busy, or the API process is at its admission
 * limit): the client should retry shortly.
 */
export class BusyError extends FlashsaleError {
  constructor(
    productId: string,
    readonly retryAfterSeconds = 1,
  ) {
    super('busy', `"${productId}" is busy, retry shortly`, { productId });
  }
}

export class InsufficientStockError extends FlashsaleError {
  constructor(productId: string, available: number, delta: number) {
    super(
      'insufficient_stock',
      `cannot remove ${-delta} units from "${productId}": only ${available} available`,
      {
        productId,
        available,
      },
    );
  }
}

/** A guarded shard script refused an admin change: the admin's shard lock was lost mid-change. */
export class AdminLockLostError extends FlashsaleError {
  constructor(productId: string, shardKey: string) {
    super('unavailable', `lost the lock of ${shardKey} while changing "${productId}"; retry`, { productId });
  }
}
