// The orders scripts' reply codes, and what each means, in one place: the fate a pay-or-cancel.lua
// reply names, the error for a claim past the buyer's limit, whether an Idempotency-Key was claimed.
import type { Fate } from '../inventory/keys.ts';
import { LimitExceededError } from './errors.ts';

/** Reply codes of pay-or-cancel.lua. */
export const FateReply = {
  paidNow: 1,
  cancelledNow: 2,
  expiredNow: 3,
  wasPaid: -1,
  wasCancelled: -2,
  wasExpired: -3,
} as const;

/** The fate a pay-or-cancel.lua reply names, and whether this call decided it. */
export function fateOfReply(code: number): { fate: Fate; now: boolean } {
  switch (code) {
    case FateReply.paidNow:
      return { fate: 'paid', now: true };
    case FateReply.cancelledNow:
      return { fate: 'cancelled', now: true };
    case FateReply.expiredNow:
      return { fate: 'expired', now: true };
    case FateReply.wasPaid:
      return { fate: 'paid', now: false };
    case FateReply.wasCancelled:
      return { fate: 'cancelled', now: false };
    case FateReply.wasExpired:
      return { fate: 'expired', now: false };
    default:
      throw new TypeError(`unexpected pay-or-cancel.lua reply ${code}`);
  }
}

/** claim.lua's reply when the claim would pass the limit; any other reply is the user's units after it. */
export const ClaimReply = { overLimit: -1 } as const;

/** The user's units after a claim.lua reply; throws LimitExceededError when it refused (nothing changed). */
export function claimedUnits(reply: number, productId: string, limit: number): number {
  if (reply === ClaimReply.overLimit) throw new LimitExceededError(productId, limit);
  return reply;
}

/** First element of idempotency-claim.lua's reply: this request claimed the key, or found it taken. */
export const IdempotencyClaimReply = { claimed: 1, taken: 0 } as const;
