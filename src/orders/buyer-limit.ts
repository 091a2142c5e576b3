// Per-user limit of a sale: claim before reserving stock, give back if the order does not go through.
import type { Redis } from 'ioredis';
import { buyerKey } from '../inventory/keys.ts';
import { defineScripts, luaScript, replyInt } from '../redis/lua.ts';
import { LimitExceededError } from './errors.ts';

const CLAIM = luaScript('flashsaleClaim', 1, new URL('./scripts/claim.lua', import.meta.url));
type ClaimRedis = Redis & { flashsaleClaim(key: string, quantity: number, limit: number): Promise<unknown> };

export class BuyerLimits {
  private readonly redis: ClaimRedis;

  constructor(redis: Redis) {
    defineScripts(redis, [CLAIM]);
    this.redis = redis as ClaimRedis;
  }

  /** Claims `quantity` units for the user; throws LimitExceededError and changes nothing past the limit. */
  async claim(productId: string, userId: string, quantity: number, limit: number): Promise<void> {
    const after = replyInt(await this.redis.flashsaleClaim(buyerKey(productId, userId), quantity, limit));
    if (after < 0) throw new LimitExceededError(productId, limit);
  }

  async giveBack(productId: string, userId: string, quantity: number): Promise<void> {
    await this.redis.decrby(buyerKey(productId, userId), quantity);
  }
}
