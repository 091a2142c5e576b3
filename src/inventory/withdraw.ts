// Gives a withdrawn reservation's units back: on its shard while the shard is live (withdraw.lua), else
// through the sale's `returning` (the shard was retired), then announces the units back on sale.
import type { OrderRecord } from '../db/orders-repo.ts';
import type { RedisClient } from '../redis/connection.ts';
import { replyInt, typedScript } from '../redis/lua.ts';
import { publishSaleEvent } from './events.ts';
import { saleKey, shardKeys, withdrawnKey } from './keys.ts';

/** withdraw.lua's replies. */
export enum WithdrawReply {
  givenBack = 1,
  absent = 0,
  retired = -3,
}

const WITHDRAW = typedScript({
  name: 'flashsaleWithdraw',
  file: new URL('./scripts/withdraw.lua', import.meta.url),
  keys: ['stock', 'sold', 'reservations'],
  args: ['id'],
  parse: replyInt,
});
const WITHDRAW_RETIRED = typedScript({
  name: 'flashsaleWithdrawRetired',
  file: new URL('./scripts/withdraw-retired.lua', import.meta.url),
  keys: ['sale', 'withdrawn'],
  args: ['orderId', 'quantity'],
  parse: replyInt,
});

/** What a withdrawal needs of the order. */
export type Withdrawable = Pick<
  OrderRecord,
  'orderId' | 'productId' | 'quantity' | 'shardKey' | 'generation'
>;

/**
 * Gives the reservation's units back, once however often it is called (its entry is the guard);
 * answers true when they went back now. Only for an order that can never become a row (tombstoned).
 */
export async function giveBackReservation(redis: RedisClient, r: Withdrawable): Promise<boolean> {
  const k = shardKeys(r.shardKey);
  const reply = await WITHDRAW.run(redis, {
    stock: k.stock,
    sold: k.sold,
    reservations: k.reservations,
    id: r.orderId,
  });
  if (reply === WithdrawReply.absent) return false;
  if (reply === WithdrawReply.retired) {
    // Two slots, two steps: the sale's guard makes the first once-only, so a crash in between is
    // finished by the next call (the entry is still there).
    await WITHDRAW_RETIRED.run(redis, {
      sale: saleKey(r.productId),
      withdrawn: withdrawnKey(r.productId),
      orderId: r.orderId,
      quantity: r.quantity,
    });
    await redis.hdel(k.reservations, r.orderId);
  }
  // Best effort: a process that missed it finds the units at its sold-out verdict's re-check.
  await publishSaleEvent(redis, { productId: r.productId, kind: 'returned', generation: r.generation }).catch(
    () => {},
  );
  return true;
}
