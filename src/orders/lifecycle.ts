// Pay or expire: each order's fate (paid, expired, cancelled) is decided once, by one script in the
// product's slot; orders of a sale with a payment timeout are registered there for expiry.
import { type Fate, lifecycleKeys } from '../inventory/keys.ts';
import { type RedisClient, runBatch } from '../redis/connection.ts';
import { replyInt, replyInts, typedScript } from '../redis/lua.ts';
import type { OrderRecord } from './order.ts';
import { fateOfReply } from './replies.ts';

const LIFECYCLE_KEYS = ['sale', 'final', 'due', 'unpaid', 'settle'] as const;

const PAY_OR_CANCEL = typedScript({
  name: 'flashsalePayOrCancel',
  file: new URL('./scripts/pay-or-cancel.lua', import.meta.url),
  keys: LIFECYCLE_KEYS,
  args: ['orderId', 'action', 'payBy', 'userId', 'quantity'],
  parse: replyInt,
});
const EXPIRE_DUE = typedScript({
  name: 'flashsaleExpireDue',
  file: new URL('./scripts/expire-due.lua', import.meta.url),
  keys: LIFECYCLE_KEYS,
  args: ['limit'],
  parse: replyInts,
});
const REGISTER = typedScript({
  name: 'flashsaleRegister',
  file: new URL('./scripts/register.lua', import.meta.url),
  keys: ['final', 'due', 'unpaid'],
  args: ['orderId', 'payBy', 'userId', 'quantity'],
  parse: replyInt,
});

/** Pays (`pay`) or cancels (`cancel`) an order, or finds the fate it already has; see pay-or-cancel.lua. */
export async function decideFate(
  redis: RedisClient,
  order: Pick<OrderRecord, 'orderId' | 'productId' | 'userId' | 'quantity' | 'payBy'>,
  action: 'pay' | 'cancel',
): Promise<{ fate: Fate; now: boolean }> {
  const code = await PAY_OR_CANCEL.run(redis, {
    ...lifecycleKeys(order.productId),
    orderId: order.orderId,
    action,
    payBy: order.payBy ?? 0,
    userId: order.userId,
    quantity: order.quantity,
  });
  return fateOfReply(code);
}

/** Expires the product's orders past their deadline (at most `limit`); see expire-due.lua. */
export async function expireDue(
  redis: RedisClient,
  productId: string,
  limit: number,
): Promise<{ orders: number; units: number; returning: number }> {
  const [orders = 0, units = 0, returning = 0] = await EXPIRE_DUE.run(redis, {
    ...lifecycleKeys(productId),
    limit,
  });
  return { orders, units, returning };
}

/** The fate decided for an order, or null while it has none. */
export async function fateOf(redis: RedisClient, productId: string, orderId: string): Promise<Fate | null> {
  return (await redis.hget(lifecycleKeys(productId).final, orderId)) as Fate | null;
}

/**
 * Registers the orders that have a payment deadline for expiry (one batch, per master on a cluster);
 * orders without one are skipped. Safe to repeat: see register.lua. Throws if any registration failed.
 */
export async function registerForExpiry(redis: RedisClient, records: readonly OrderRecord[]): Promise<void> {
  const timed = records.filter((r) => r.payBy !== undefined);
  if (timed.length === 0) return;
  REGISTER.define(redis);
  const replies = await runBatch(
    redis,
    timed.map((r) => {
      const keys = lifecycleKeys(r.productId);
      return {
        key: keys.due,
        queue: (p) =>
          REGISTER.run(p, {
            final: keys.final,
            due: keys.due,
            unpaid: keys.unpaid,
            orderId: r.orderId,
            payBy: r.payBy ?? 0,
            userId: r.userId,
            quantity: r.quantity,
          }),
      };
    }),
  );
  for (const [err] of replies) if (err) throw err;
}
