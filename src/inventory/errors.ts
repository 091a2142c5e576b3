// Inventory errors: what an order or an admin change can run into, as typed codes.
import { FlashsaleError, UnavailableError } from '../errors.ts';

export class UnknownProductError extends FlashsaleError {
  constructor(productId: string) {
    super('unknown_product', `no sale for product "${productId}"`, { productId });
  }
}

/** Nothing of the product is left on sale (`available` 0): no order of any size can be served. */
export class SoldOutError extends FlashsaleError {
  /** An expected answer: no stack trace (see CodedError). */
  static readonly refusal = true;

  constructor(productId: string) {
    super('sold_out', `"${productId}" is sold out`, { productId, available: 0 });
  }
}

/**
 * Fewer units on sale than a request takes, `available` saying how many there are: an order of
 * `quantity` units (a smaller one can still be served, so this is not `sold_out`), or a restock's removal.
 */
export class InsufficientStockError extends FlashsaleError {
  /** An expected answer: no stack trace (see CodedError). */
  static readonly refusal = true;

  /** An order for more units than are left, or (their regrouping raced) than any one shard holds. */
  static order(productId: string, quantity: number, available: number): InsufficientStockError {
    const message =
      available >= quantity
        ? `no shard of "${productId}" holds ${quantity} units (${available} left in smaller lots)`
        : `only ${available} of "${productId}" left: an order for ${quantity} cannot be served`;
    return new InsufficientStockError(message, { productId, available, quantity });
  }

  /** A restock removing `-delta` units where only `available` are left. */
  static removal(productId: string, available: number, delta: number): InsufficientStockError {
    const message = `cannot remove ${-delta} units from "${productId}": only ${available} available`;
    return new InsufficientStockError(message, { productId, available });
  }

  private constructor(message: string, details: { productId: string; available: number; quantity?: number }) {
    super('insufficient_stock', message, details);
  }
}

/** The refusal of an order for `quantity` units when `available` are on sale and none could be had. */
export function outOfStock(productId: string, quantity: number, available: number): FlashsaleError {
  return available > 0
    ? InsufficientStockError.order(productId, quantity, available)
    : new SoldOutError(productId);
}

/** Orders of the product open at `startsAt` (epoch ms, Redis' clock), which has not come yet. */
export class NotStartedError extends FlashsaleError {
  /** An expected answer: no stack trace (see CodedError). */
  static readonly refusal = true;

  constructor(productId: string, startsAt: number) {
    super('not_started', `"${productId}" is not on sale before ${new Date(startsAt).toISOString()}`, {
      productId,
      startsAt: new Date(startsAt).toISOString(),
    });
  }
}

/** Orders of the product closed at `endsAt` (epoch ms, Redis' clock). */
export class SaleEndedError extends FlashsaleError {
  /** An expected answer: no stack trace (see CodedError). */
  static readonly refusal = true;

  constructor(productId: string, endsAt: number) {
    super('sale_ended', `the sale of "${productId}" ended at ${new Date(endsAt).toISOString()}`, {
      productId,
      endsAt: new Date(endsAt).toISOString(),
    });
  }
}

/**
 * The order cannot be served now (its shard lock stayed busy, or the API process is at its admission
 * limit): the client should retry shortly. Without a product: refused before the request was read.
 */
export class BusyError extends FlashsaleError {
  /** An expected answer: no stack trace (see CodedError). */
  static readonly refusal = true;

  constructor(
    productId: string | undefined,
    readonly retryAfterSeconds = 1,
  ) {
    super(
      'busy',
      productId === undefined
        ? 'too many orders in flight, retry shortly'
        : `"${productId}" is busy, retry shortly`,
      productId === undefined ? {} : { productId },
    );
  }
}

/** A restock would put more than MAX_STOCK units on sale in all (`total`). */
export class StockLimitError extends FlashsaleError {
  constructor(productId: string, total: number, delta: number, max: number) {
    super(
      'stock_limit_exceeded',
      `cannot add ${delta} units to "${productId}": ${total} are on sale in all, at most ${max} may be`,
      { productId, total, max },
    );
  }
}

/** A guarded shard script refused an admin change: the admin's shard lock was lost mid-change. */
export class AdminLockLostError extends FlashsaleError {
  constructor(productId: string, shardKey: string) {
    super('unavailable', `lost the lock of ${shardKey} while changing "${productId}"; retry`, { productId });
  }
}

/**
 * Redis became unreachable after a reservation was sent: it may or may not have been made. Nothing
 * sent can take effect once Redis' clock has passed `sentDeadline`; after that, its entry tells.
 */
export class ReservationInDoubtError extends UnavailableError {
  constructor(
    cause: unknown,
    readonly sentDeadline: number,
    /** The id of the reservation whose reply was lost: the order's id if it was made. */
    readonly orderId: string,
  ) {
    super('Redis', cause);
  }
}

/**
 * The only stock left is on shards whose Redis master has fewer live replicas than REDIS_WAIT_REPLICAS
 * (after a failover, until a replica is added): nothing was sold; it sells again once one is back.
 */
export class StrandedStockError extends FlashsaleError {
  constructor(productId: string, units: number) {
    super(
      'unavailable',
      `the ${units} units of "${productId}" left are on a Redis master without enough replicas; nothing was sold, retry later`,
      { productId, stranded: units },
    );
  }
}
