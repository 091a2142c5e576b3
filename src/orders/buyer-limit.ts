// Per-user limit of a sale: claim before reserving stock, give back if the order does not go
// through. Claims are recorded per order attempt (its ticket), so both steps are safe to run twice.
import type { RedisClient } from '../redis/connection.ts';
import { replyInt, typedScript } from '../redis/lua.ts';
import { buyerClaimsKey, buyerKey } from './keys.ts';
import { claimedUnits } from './replies.ts';

const CLAIM = typedScript({
  name: 'flashsaleClaim',
  file: new URL('./scripts/claim.lua', import.meta.url),
  keys: ['count', 'claims'],
  args: ['quantity', 'limit', 'ticket', 'ttlSeconds', 'countTtlSeconds'],
  parse: replyInt,
});
const GIVE_BACK = typedScript({
  name: 'flashsaleGiveBack',
  file: new URL('./scripts/give-back.lua', import.meta.url),
  keys: ['count', 'claims'],
  args: ['ticket'],
  parse: replyInt,
});

/** A claim's record must outlive every retry that may still resolve its attempt (Idempotency-Keys live 24 h). */
const CLAIMS_TTL_SECONDS = 2 * 24 * 60 * 60;
/**
 * A buyer's count outlives any sale's busy weeks: it is refreshed by every claim, so it lapses only
 * after 30 days without one (a sale with a per-user limit that runs longer would count afresh).
 */
const COUNT_TTL_SECONDS = 30 * 24 * 60 * 60;

export class BuyerLimits {
  constructor(private readonly redis: RedisClient) {}

  /** Claims `quantity` units for the user; throws LimitExceededError and changes nothing past the limit. */
  async claim(
    productId: string,
    userId: string,
    quantity: number,
    limit: number,
    ticket: string,
  ): Promise<void> {
    const reply = await CLAIM.run(this.redis, {
      count: buyerKey(productId, userId),
      claims: buyerClaimsKey(productId, userId),
      quantity,
      limit,
      ticket,
      ttlSeconds: CLAIMS_TTL_SECONDS,
      countTtlSeconds: COUNT_TTL_SECONDS,
    });
    claimedUnits(reply, productId, limit);
  }

  /** Gives back what the attempt `ticket` claimed, if it holds a claim; answers the units given back. */
  giveBack(productId: string, userId: string, ticket: string): Promise<number> {
    return GIVE_BACK.run(this.redis, {
      count: buyerKey(productId, userId),
      claims: buyerClaimsKey(productId, userId),
      ticket,
    });
  }
}
