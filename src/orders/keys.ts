// The orders module's Redis keys (DESIGN.md §3): Idempotency-Key records and per-user limit counts.
// Stock, shard and reservation keys belong to the inventory (src/inventory/keys.ts).

/**
 * A buyer's Idempotency-Key: the buyer in the hash tag (user ids hold no braces), so one buyer's key
 * never answers another's request. Bounded: 128 + 200 characters at most (validation.ts).
 */
export const idempotencyKey = (buyer: string, key: string): string => `idem:{${buyer}}:${key}`;
export const buyerKey = (productId: string, userId: string): string => `buyer:{${productId}:${userId}}`;
/** The claims behind a buyer's count, per order attempt (ticket → units), so each is given back at most once. */
export const buyerClaimsKey = (productId: string, userId: string): string =>
  `${buyerKey(productId, userId)}:claims`;
