// The Redis key layout of DESIGN.md §3, in one place. The hash tag {P:g:i} keeps every key of a
// shard in one cluster slot (so one Lua script can touch them all) while spreading shards apart.

export const PRODUCT_ID_PATTERN = /^[A-Za-z0-9_-]{1,64}$/;

/** Pub/sub channel on which sale changes (create, restock, reshard) are announced to every API process. */
export const SALE_EVENTS_CHANNEL = 'sale:events';

export const saleKey = (productId: string): string => `sale:{${productId}}`;
export const shardListKey = (productId: string): string => `sale:{${productId}}:shards`;

export const shardStockKey = (productId: string, generation: number, index: number): string =>
  `stock:{${productId}:${generation}:${index}}`;

/** Keys derived from a shard's stock key; all share its hash tag. */
export function shardKeys(stockKey: string) {
  return {
    stock: stockKey,
    lock: `${stockKey}:lock`,
    fence: `${stockKey}:fence`,
    sold: `${stockKey}:sold`,
    reservations: `${stockKey}:res`,
    /** What the retire handed back (JSON {stock, sold}), kept until the retired shard is pruned. */
    retired: `${stockKey}:retired`,
  };
}
export type ShardKeys = ReturnType<typeof shardKeys>;

/** Set of retired stock keys whose reservation hashes may still hold orders on their way to Postgres. */
export const retiredShardsKey = (productId: string): string => `sale:{${productId}}:retired`;
/** Lock that serialises admin changes of one product (create, restock, reshard). */
export const adminLockName = (productId: string): string => `sale:{${productId}}:admin`;

export const idempotencyKey = (key: string): string => `idem:{${key}}`;
export const buyerKey = (productId: string, userId: string): string => `buyer:{${productId}:${userId}}`;
/** The claims behind a buyer's count, per order attempt (ticket → units), so each is given back at most once. */
export const buyerClaimsKey = (productId: string, userId: string): string =>
  `${buyerKey(productId, userId)}:claims`;
