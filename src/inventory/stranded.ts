// Shards whose Redis master is short of replicas (REDIS_WAIT_REPLICAS): an order skips them, since a
// reservation there could not be confirmed; when only they hold stock, the answer is 503, not sold out.
import type { RedisClient } from '../redis/connection.ts';
import type { ReplicaWait } from '../redis/replica-wait.ts';
import { StrandedStockError } from './errors.ts';
import { readShardStocks, type Sale } from './sale.ts';

/** The catalog's shard order for an order, split into the shards it may use and the stranded ones. */
export interface Routable {
  first: readonly number[];
  empty: readonly number[];
  /** Shards on masters short of replicas: not tried now. */
  stranded: readonly number[];
}

/** Splits off the shards whose master cannot confirm a write now; all usable without `replicas`. */
export function routable(
  sale: Sale,
  order: { first: readonly number[]; empty: readonly number[] },
  replicas: ReplicaWait | undefined,
): Routable {
  if (!replicas) return { ...order, stranded: [] };
  const usable = (i: number) => replicas.canConfirm(sale.shardKeys[i] as string);
  const all = [...order.first, ...order.empty];
  if (all.every(usable)) return { ...order, stranded: [] };
  return {
    first: order.first.filter(usable),
    empty: order.empty.filter(usable),
    stranded: all.filter((i) => !usable(i)),
  };
}

/**
 * Throws StrandedStockError (503 unavailable) when the stranded shards hold stock: it is all the order
 * could still get, and it cannot be confirmed now. Reads them once, noting each one's stock in `left`.
 */
export async function refuseIfStranded(
  redis: RedisClient,
  sale: Sale,
  stranded: readonly number[],
  left: Map<number, number>,
  onStranded?: (productId: string, units: number) => void,
): Promise<void> {
  if (stranded.length === 0) return;
  const stocks = await readShardStocks(
    redis,
    stranded.map((i) => sale.shardKeys[i] as string),
  );
  for (const [k, i] of stranded.entries()) left.set(i, stocks[k] ?? 0);
  const units = stocks.reduce<number>((a, b) => a + (b ?? 0), 0);
  if (units === 0) return;
  onStranded?.(sale.productId, units);
  throw new StrandedStockError(sale.productId, units);
}
