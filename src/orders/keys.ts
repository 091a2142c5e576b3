// The orders module's Redis keys (DESIGN.md §3): Idempotency-Key records and per-user limit counts.
// Stock, shard and reservation keys belong to the inventory (src/inventory/keys.ts).

export const idempotencyKey = (key: string): string => `idem:{${key}}`;
export const buyerKey = (productId: string, userId: string): string => `buyer:{${productId}:${userId}}`;
/** The claims behind a buyer's count, per order attempt (ticket → units), so each is given back at most once. */
export const buyerClaimsKey = (productId: string, userId: string): string =>
  `${buyerKey(productId, userId)}:claims`;
