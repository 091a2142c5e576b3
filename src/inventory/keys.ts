// The Redis key layout of DESIGN.md §3, in one place. The hash tag {P:g:i} keeps every key of a
// shard in one cluster slot (so one Lua script can touch them all) while spreading shards apart.

export const PRODUCT_ID_PATTERN = /^[A-Za-z0-9_-]{1,64}$/;

/**
 * Pub/sub channel on which a product's changes (create, restock, reshard) are announced to every API
 * process that sells it. It shares the product's hash tag: on a cluster it is a sharded channel served
 * by the product's master, so events cost one node, not a broadcast over the cluster bus.
 */
export const saleEventsChannel = (productId: string): string => `sale:{${productId}}:events`;
const SALE_EVENTS = /^sale:\{([A-Za-z0-9_-]{1,64})\}:events$/;
/** The product a sale-events channel belongs to; null for another channel. */
export const productOfChannel = (channel: string): string | null => SALE_EVENTS.exec(channel)?.[1] ?? null;

export const saleKey = (productId: string): string => `sale:{${productId}}`;
export const shardListKey = (productId: string): string => `sale:{${productId}}:shards`;
/** The sale's recent generation changes (history.ts), newest first. */
export const changesKey = (productId: string): string => `sale:{${productId}}:changes`;

/** What became of an order that was accepted: paid for good, or expired / cancelled (units given back). */
export type Fate = 'paid' | 'expired' | 'cancelled';

/**
 * The keys of a sale's pay-or-expire bookkeeping, all in the product's slot so that one script decides
 * an order's fate and puts its units on their way back together: the sale hash (its `returning`,
 * `returned`, `paid`, `expired`, `cancelled` counters), each decided order's fate (`final`: orderId →
 * paid|expired|cancelled), unpaid orders by deadline (`due`, a ZSET scored by server ms), what an
 * unpaid order holds (`unpaid`: orderId → JSON {userId, quantity}), and the decisions not yet in
 * Postgres (`settle`: orderId → JSON {status, userId, quantity, at}).
 */
export function lifecycleKeys(productId: string) {
  const sale = saleKey(productId);
  return {
    sale,
    final: `${sale}:final`,
    due: `${sale}:due`,
    unpaid: `${sale}:unpaid`,
    settle: `${sale}:settle`,
  };
}

/**
 * A shard's stock key `stock:{P:g:i}`; with a placement salt `stock:{P:g:i:s}`, a tag chosen so that
 * the shard lands on a given master of a Redis Cluster (see placement.ts).
 */
export const shardStockKey = (productId: string, generation: number, index: number, salt?: number): string =>
  salt === undefined
    ? `stock:{${productId}:${generation}:${index}}`
    : `stock:{${productId}:${generation}:${index}:${salt}}`;

/** A shard named by its place in a sale: product, generation, index, and its stock key. */
export interface ShardRef {
  productId: string;
  generation: number;
  index: number;
  /** The shard's stock key, `stock:{P:g:i}`. */
  key: string;
}

const STOCK_KEY = /^stock:\{([A-Za-z0-9_-]{1,64}):(\d{1,15}):(\d{1,4})(?::\d{1,6})?\}$/;

/** The shard a stock key names; null for a key that is not one. */
export function parseShardKey(key: string): ShardRef | null {
  const m = STOCK_KEY.exec(key);
  return m?.[1] ? { productId: m[1], generation: Number(m[2]), index: Number(m[3]), key } : null;
}

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
    /** Marker written before a WAIT for replicas of this shard's master (expires by itself). */
    replicated: `${stockKey}:replicated`,
  };
}

/** SCAN pattern matching every shard's reservation hash (`shardKeys(k).reservations`). */
export const RESERVATION_HASHES = 'stock:{*}:res';

/** Set of retired stock keys whose reservation hashes may still hold orders on their way to Postgres. */
export const retiredShardsKey = (productId: string): string => `sale:{${productId}}:retired`;
/** Hash of withdrawn orders whose units went back through the sale (their shard was retired): id → units. */
export const withdrawnKey = (productId: string): string => `sale:{${productId}}:withdrawn`;
/** Lock that serialises admin changes of one product (create, restock, reshard). */
export const adminLockName = (productId: string): string => `sale:{${productId}}:admin`;

/** Which kind of lock a lock name is: a shard lock, a product's admin lock, or another (a closed set, for labels). */
export function lockKind(name: string): 'shard' | 'admin' | 'other' {
  if (name.startsWith('stock:') && name.endsWith(':lock')) return 'shard';
  if (name.startsWith('sale:') && name.endsWith(':admin')) return 'admin';
  return 'other';
}
