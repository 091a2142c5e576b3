// Gathers a product's remaining stock into one shard, so that an order for q units is served while
// the sale holds q in all (no phantom sold-out): a live reshard to one shard, one at a time per product.
import type { SaleAdmin } from './admin.ts';

/**
 * Near the end of a sale, with multi-unit orders, the units left can sit in lots smaller than an
 * order though they add up to it. Rather than split an order over shards (parts under several locks
 * and fences, persisted and returned together), the stock is moved into one shard by the live reshard
 * that admins use, which already keeps every invariant under load. It is rare: it runs only when an
 * order found every shard short while their sum was enough, and leaves one shard, where no lot is
 * short again until a restock or reshard spreads the stock.
 *
 * @example
 * const consolidate = new StockConsolidator(admin);
 * await consolidate.run('shoe'); // concurrent callers for 'shoe' share one reshard
 */
export class StockConsolidator {
  private readonly running = new Map<string, Promise<void>>();

  constructor(
    private readonly admin: SaleAdmin,
    private readonly onConsolidated?: (productId: string) => void,
  ) {}

  run(productId: string): Promise<void> {
    let gathering = this.running.get(productId);
    if (!gathering) {
      gathering = this.admin
        .reshard(productId, 1)
        .then(() => this.onConsolidated?.(productId))
        .finally(() => this.running.delete(productId));
      this.running.set(productId, gathering);
    }
    return gathering;
  }
}
