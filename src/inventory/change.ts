// An admin change of a sale as journaled, and how it turns the stock of the generation it retires
// into the next one; the bounds a restock is checked against before anything is written.
import type { RedisClient } from '../redis/connection.ts';
import { InsufficientStockError, StockLimitError, UnknownProductError } from './errors.ts';
import type { SaleEvent } from './events.ts';
import { availableStock, MAX_STOCK, type Sale, type SaleWindow, splitEvenly } from './sale.ts';

/** A change as journaled: what another admin needs to finish it once the shards are retired. */
export type Change =
  | {
      action: 'put';
      stock: number;
      shards: number;
      perUserLimit: number;
      window?: SaleWindow;
      paymentTimeoutSec?: number;
    }
  /** `by`: set when the service resharded on its own (the sold-out consolidation); absent: an admin. */
  | { action: 'reshard'; shards: number; by?: 'consolidation' }
  | { action: 'restock'; delta: number }
  /** Puts `units` of expired or cancelled orders (read from the sale's `returning` when journaled) back on sale. */
  | { action: 'return'; units: number };

/** The journal of a change that has not switched yet; `since` is when it was first journaled (ms). */
export type PendingChange = Change & { since: number };

/** Reads the journal (the sale hash's `pending` field): null when no change is pending. */
export function parsePending(raw: string | null | undefined): PendingChange | null {
  return raw ? (JSON.parse(raw) as PendingChange) : null;
}

const NO_WINDOW: SaleWindow = { startsAt: null, endsAt: null };

/** What the retired shards handed back, and the generation reserved for their successor. */
export interface Retired {
  stock: number;
  sold: number;
  generation: number;
}

/** What a change hands to `switchGeneration`: the new generation's stock and how the sale's totals move. */
export interface NextGeneration {
  stocks: number[];
  perUserLimit: number;
  window: SaleWindow;
  paymentTimeoutSec: number;
  /** Change of `total` (units put on sale or taken off). */
  totalDelta: number;
  /** Units of expired or cancelled orders this generation puts back on sale (off the sale's `returning`). */
  returningTaken: number;
}

/** What a change made: the generation it switched to, how it is announced, the units now on sale. */
export interface Applied {
  generation: number;
  kind: SaleEvent['kind'];
  available: number;
}

export type Planned = Omit<Applied, 'generation'> & { next: NextGeneration };

/** A next generation that keeps the sale's settings (limit, window, payment timeout). */
function inheriting(sale: Sale, stocks: number[], totalDelta: number, returningTaken = 0): NextGeneration {
  return {
    stocks,
    perUserLimit: sale.perUserLimit,
    window: sale.window,
    paymentTimeoutSec: sale.paymentTimeoutSec,
    totalDelta,
    returningTaken,
  };
}

/**
 * How `change` turns the retired stock into the next generation. Decided before anything is written,
 * so a change of an unknown product is refused without a journal.
 */
export function planFor(productId: string, change: Change, sale: Sale | null): (retired: Retired) => Planned {
  if (change.action === 'put') {
    return (retired) => ({
      kind: sale ? 'replaced' : 'created',
      available: change.stock,
      next: {
        stocks: splitEvenly(change.stock, change.shards),
        perUserLimit: change.perUserLimit,
        window: change.window ?? NO_WINDOW,
        paymentTimeoutSec: change.paymentTimeoutSec ?? 0,
        totalDelta: change.stock - retired.stock,
        returningTaken: 0,
      },
    });
  }
  if (!sale) throw new UnknownProductError(productId);
  if (change.action === 'reshard') {
    return (retired) => ({
      kind: 'resharded',
      available: retired.stock,
      next: inheriting(sale, splitEvenly(retired.stock, change.shards), 0),
    });
  }
  if (change.action === 'return') {
    // Like a restock, but the units were never taken off `total`: they leave `returning` instead.
    return (retired) => ({
      kind: 'returned',
      available: retired.stock + change.units,
      next: inheriting(
        sale,
        splitEvenly(retired.stock + change.units, sale.shardKeys.length),
        0,
        change.units,
      ),
    });
  }
  // Like a reshard, a restock moves the stock into a new generation (same shard count) instead of
  // adjusting shards in place: see the header.
  return (retired) => {
    const available = Math.max(0, retired.stock + change.delta);
    return {
      kind: 'restocked',
      available,
      next: inheriting(sale, splitEvenly(available, sale.shardKeys.length), available - retired.stock),
    };
  };
}

/**
 * Refuses a restock that would leave a negative stock or put more than MAX_STOCK units on sale in
 * all (`total`), before anything is written. Called under every shard lock, so the stock cannot move.
 */
export async function checkRestock(redis: RedisClient, sale: Sale, delta: number): Promise<void> {
  if (sale.total + delta > MAX_STOCK) throw new StockLimitError(sale.productId, sale.total, delta, MAX_STOCK);
  if (delta >= 0) return;
  const available = await availableStock(redis, sale);
  if (available + delta < 0) throw InsufficientStockError.removal(sale.productId, available, delta);
}
