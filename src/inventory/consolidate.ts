// Regroups a product's remaining stock into fewer, larger lots, so that an order for q units is served
// while the sale holds q in all (no phantom sold-out): a live reshard, one at a time per product.
import type { SaleAdmin } from './admin.ts';

/** What the order that found every lot short saw: the sale's shards and units, and what it needs. */
export interface ShortLots {
  productId: string;
  /** The generation whose shards were all short (a change since then already regrouped them). */
  generation: number;
  shards: number;
  available: number;
  quantity: number;
}

/**
 * Near the end of a sale, with multi-unit orders, the units left can sit in lots smaller than an
 * order though they add up to it. Rather than split an order over shards (parts under several locks
 * and fences, persisted and returned together), the stock is re-split by the live reshard that admins
 * use, which already keeps every invariant under load, over as many shards as still give every shard
 * q units: floor(available / q), never more than now. The sale keeps as much lock parallelism as its
 * stock allows; only when fewer than 2q units are left does it come down to one shard. It runs only
 * when an order found every shard short while their sum was enough.
 *
 * @example
 * const consolidate = new StockConsolidator(admin, (id) => catalog.generationOf(id));
 * // 10 units left over 8 shards, an order for 3: regrouped into 3 shards of 3-4 units
 * await consolidate.run({ productId: 'shoe', generation: 4, shards: 8, available: 10, quantity: 3 });
 */
export class StockConsolidator {
  private readonly running = new Map<string, Promise<void>>();

  /** `generationOf`: the product's generation now (fresh), so a regrouping already made is not redone. */
  constructor(
    private readonly admin: SaleAdmin,
    private readonly generationOf: (productId: string) => Promise<number | undefined>,
    private readonly onConsolidated?: (productId: string, shards: number) => void,
  ) {}

  /** Regroups the lots (concurrent callers for one product share one reshard). */
  run(short: ShortLots): Promise<void> {
    let gathering = this.running.get(short.productId);
    if (!gathering) {
      gathering = this.regroup(short).finally(() => this.running.delete(short.productId));
      this.running.set(short.productId, gathering);
    }
    return gathering;
  }

  private async regroup(short: ShortLots): Promise<void> {
    // Another process (or an admin) changed the sale since: its new lots are what to try next.
    if ((await this.generationOf(short.productId)) !== short.generation) return;
    const shards = lotsFor(short);
    await this.admin.reshard(short.productId, shards, 'consolidation');
    this.onConsolidated?.(short.productId, shards);
  }
}

/** The most shards over which an even split still gives each at least `quantity` units. */
export function lotsFor({ shards, available, quantity }: ShortLots): number {
  return Math.max(1, Math.min(shards, Math.floor(available / quantity)));
}
