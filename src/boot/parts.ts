// Parts that both the API and the worker start: a logged order queue, and pay-or-expire (the
// pay/cancel use case and the expiry sweep).
import type { WorkerConfig } from '../config/load.ts';
import type { SaleAdmin } from '../inventory/admin.ts';
import type { BuyerLimits } from '../orders/buyer-limit.ts';
import { startExpiry } from '../orders/expiry.ts';
import { OrderPayments } from '../orders/payments.ts';
import { createOrderQueue, type OrderQueue } from '../orders/queue.ts';
import { UnitReturns } from '../orders/unit-returns.ts';
import type { Runtime } from './boot.ts';

/** A queue of the orders under `prefix`, its errors logged. */
export function orderQueue(rt: Runtime<WorkerConfig>, prefix: string): OrderQueue {
  const queue = createOrderQueue(rt.target, prefix);
  queue.on('error', (err) => rt.logger.warn({ err, prefix }, 'order queue error'));
  return queue;
}

/**
 * Pay-or-expire in this process: the pay/cancel use case and the expiry sweep, sharing one coalesced
 * return of units per product. Every API process (over the timed sales it has seen: `products`) and
 * worker (over every sale) runs the sweep, and the claim in Redis makes each expiry happen once, so
 * expiry goes on while either kind of process is down.
 */
export function startLifecycle(
  rt: Runtime<WorkerConfig>,
  admin: SaleAdmin,
  limits: BuyerLimits,
  products?: () => string[],
) {
  const { redis, db, metrics, logger, config } = rt;
  const returns = new UnitReturns(admin, (units) => metrics.unitsReturned.inc(units));
  const payments = new OrderPayments({
    redis,
    db,
    returns,
    limits,
    onFate: (fate) => metrics.orderFates.inc({ fate }),
    logger,
  });
  const expiry = startExpiry({
    redis,
    db,
    returns,
    limits,
    products,
    intervalMs: config.lifecycle.expiryIntervalMs,
    onExpired: (orders) => metrics.orderFates.inc({ fate: 'expired' }, orders),
    logger,
  });
  return { payments, expiry };
}
