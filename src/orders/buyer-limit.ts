// Per-user limit of a sale: claim before reserving stock, give back if the order does not go
// through. Claims are recorded per order attempt (its ticket), so both steps are safe to run twice.
import type { Redis } from 'ioredis';
import { defineScripts, luaScript, replyInt } from '../redis/lua.ts';
import { LimitExceededError } from './errors.ts';
import { buyerClaimsKey, buyerKey } from './keys.ts';

const CLAIM = luaScript('flashsaleClaim', 2, new URL('./scripts/claim.lua', import.meta.url));
const GIVE_BACK = luaScript('flashsaleGiveBack', 2, new URL('./scripts/give-back.lua', import.meta.url));
type LimitRedis = Redis & {
  flashsaleClaim(
    key: string,
    claims: string,
    quantity: number,
    limit: number,
    ticket: string,
    ttl: number,
  ): Promise<unknown>;
  flashsaleGiveBack(key: string, claims: string, ticket: string): Promise<unknown>;
};

/** A claim's record must outlive every retry that may still resolve its attempt (Idempotency-Keys live 24 h). */
const CLAIMS_TTL_SECONDS = 2 * 24 * 60 * 60;

export class BuyerLimits {
  private readonly redis: LimitRedis;

  constructor(redis: Redis) {
    defineScripts(redis, [CLAIM, GIVE_BACK]);
    this.redis = redis as LimitRedis;
  }

  /** Claims `quantity` units for the user; throws LimitExceededError and changes nothing past the limit. */
  async claim(
    productId: string,
    userId: string,
    quantity: number,
    limit: number,
    ticket: string,
  ): Promise<void> {
    const after = replyInt(
      await this.redis.flashsaleClaim(
        buyerKey(productId, userId),
        buyerClaimsKey(productId, userId),
        quantity,
        limit,
        ticket,
        CLAIMS_TTL_SECONDS,
      ),
    );
    if (after < 0) throw new LimitExceededError(productId, limit);
  }

  /** Gives back what the attempt `ticket` claimed, if it holds a claim; answers the units given back. */
  async giveBack(productId: string, userId: string, ticket: string): Promise<number> {
    return replyInt(
      await this.redis.flashsaleGiveBack(
        buyerKey(productId, userId),
        buyerClaimsKey(productId, userId),
        ticket,
      ),
    );
  }
}
