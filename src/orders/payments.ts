// The buyer's side of pay-or-expire: pay an order, or cancel it while unpaid. The fate is decided by
// pay-or-cancel.lua, the one place payment and expiry/cancellation race; units given back go on sale.
import type { Kysely } from 'kysely';
import type { Database } from '../db/database.ts';
import type { Fate } from '../inventory/keys.ts';
import type { Logger } from '../log.ts';
import type { RedisClient } from '../redis/connection.ts';
import type { BuyerLimits } from './buyer-limit.ts';
import { AlreadyPaidError, OrderCancelledError, OrderExpiredError, UnknownOrderError } from './errors.ts';
import { settleOrder } from './expiry.ts';
import { decideFate } from './lifecycle.ts';
import { orderStatus } from './order-status.ts';
import type { UnitReturns } from './unit-returns.ts';

export interface PaymentsDeps {
  redis: RedisClient;
  db: Kysely<Database>;
  returns: UnitReturns;
  /** The per-user limits, given back at once for an order cancelled (or expired by a late payment). */
  limits: BuyerLimits;
  /** Called for each fate this process decided (metrics). */
  onFate?: (fate: Fate) => void;
  logger?: Logger;
}

export interface FateAnswer {
  orderId: string;
  status: Fate;
}

/**
 * `pay` answers `{orderId, status: 'paid'}` (again for an order already paid) or throws
 * `UnknownOrderError` (also for another buyer's order), `OrderExpiredError` (not paid in time, also when this very
 * payment came too late) or `OrderCancelledError`. `cancel` answers `{orderId, status: 'cancelled'}`
 * (again for one already cancelled) once its units are back on sale, or throws the same lookups'
 * errors, `AlreadyPaidError` or `OrderExpiredError`. A refused request changes nothing.
 */
export class OrderPayments {
  constructor(private readonly deps: PaymentsDeps) {}

  async pay(orderId: string, userId: string): Promise<FateAnswer> {
    const fate = await this.decide(orderId, userId, 'pay');
    if (fate === 'expired') throw new OrderExpiredError(orderId);
    if (fate === 'cancelled') throw new OrderCancelledError(orderId);
    return { orderId, status: 'paid' };
  }

  async cancel(orderId: string, userId: string): Promise<FateAnswer> {
    const fate = await this.decide(orderId, userId, 'cancel');
    if (fate === 'paid') throw new AlreadyPaidError(orderId);
    if (fate === 'expired') throw new OrderExpiredError(orderId);
    return { orderId, status: 'cancelled' };
  }

  private async decide(orderId: string, userId: string, action: 'pay' | 'cancel'): Promise<Fate> {
    const { redis, db } = this.deps;
    const order = await orderStatus(redis, db, orderId);
    // Another buyer's order answers as an order that does not exist: the answer tells nobody else it does.
    if (order.userId !== userId) throw new UnknownOrderError(orderId);
    const { fate, now } = await decideFate(redis, order, action);
    if (now) this.deps.onFate?.(fate);
    if (now && fate !== 'paid') {
      // If this fails (or the process dies first) the expiry sweep of any process puts them back:
      // they wait in the sale's `returning`.
      await this.deps.returns.request(order.productId).catch((err: unknown) => {
        this.deps.logger?.warn({ err, orderId }, 'putting units back on sale failed; the expiry sweep will');
      });
      // Before the answer: a buyer told "cancelled" may order again at once, within their limit.
      await settleOrder(this.deps, order.productId, orderId).catch((err: unknown) => {
        this.deps.logger?.warn({ err, orderId }, 'settling the fate failed; the expiry sweep will');
      });
    }
    return fate;
  }
}
