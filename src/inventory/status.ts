// What an operator sees of a sale: units available, sold (reserved + confirmed), each shard, and a
// reconcile that checks DESIGN.md §5's conservation: available + sold == total, sold == reserved + confirmed.
import type { Redis } from 'ioredis';
import type { Kysely } from 'kysely';
import type { Database } from '../db/database.ts';
import { existingOrderIds, sumQuantity } from '../db/orders-repo.ts';
import { UnknownProductError } from './errors.ts';
import { retiredShardsKey, shardKeys } from './keys.ts';
import { loadSale } from './sale.ts';

export interface ShardView {
  index: number;
  key: string;
  stock: number;
  sold: number;
}

export interface SaleStatus {
  productId: string;
  generation: number;
  perUserLimit: number;
  total: number;
  available: number;
  sold: number;
  /** Units in reservations not yet persisted (no Postgres row yet). */
  reserved: number;
  /** Units in Postgres rows. */
  confirmed: number;
  /** Reservations whose row already exists (the writer died before clearing them; the sweeper will). */
  staleReservations: number;
  shards: ShardView[];
}

export interface Difference {
  check: string;
  expected: number;
  found: number;
  detail: string;
}

export async function saleStatus(redis: Redis, db: Kysely<Database>, productId: string): Promise<SaleStatus> {
  const sale = await loadSale(redis, productId);
  if (!sale) throw new UnknownProductError(productId);
  const retired = await redis.smembers(retiredShardsKey(productId));
  const p = redis.pipeline();
  for (const key of sale.shardKeys) p.get(key).get(shardKeys(key).sold);
  for (const key of [...sale.shardKeys, ...retired]) p.hvals(shardKeys(key).reservations);
  const replies = ((await p.exec()) ?? []).map(([err, v]) => {
    if (err) throw err;
    return v;
  });
  const shards = sale.shardKeys.map((key, index) => ({
    index,
    key,
    stock: Number(replies[index * 2] ?? 0),
    sold: Number(replies[index * 2 + 1] ?? 0),
  }));
  const reservations = replies
    .slice(sale.shardKeys.length * 2)
    .flatMap((vals) => (vals as string[]).map((v) => JSON.parse(v) as { orderId: string; quantity: number }));
  const [confirmed, persisted] = await Promise.all([
    sumQuantity(db, productId),
    existingOrderIds(
      db,
      reservations.map((r) => r.orderId),
    ),
  ]);
  const pending = reservations.filter((r) => !persisted.has(r.orderId));
  return {
    productId,
    generation: sale.generation,
    perUserLimit: sale.perUserLimit,
    total: sale.total,
    available: shards.reduce((a, s) => a + s.stock, 0),
    sold: sale.retiredSold + shards.reduce((a, s) => a + s.sold, 0),
    reserved: pending.reduce((a, r) => a + r.quantity, 0),
    confirmed,
    staleReservations: reservations.length - pending.length,
    shards,
  };
}

export function reconcile(status: SaleStatus): { ok: boolean; differences: Difference[] } {
  const differences: Difference[] = [];
  const { available, sold, total, reserved, confirmed } = status;
  if (available + sold !== total) {
    differences.push({
      check: 'available + sold == total',
      expected: total,
      found: available + sold,
      detail: `available ${available} + sold ${sold} = ${available + sold}, total ${total}`,
    });
  }
  if (sold !== reserved + confirmed) {
    differences.push({
      check: 'sold == reserved + confirmed',
      expected: sold,
      found: reserved + confirmed,
      detail: `reserved ${reserved} + confirmed ${confirmed} = ${reserved + confirmed}, sold ${sold}`,
    });
  }
  for (const s of status.shards) {
    if (s.stock < 0) {
      differences.push({
        check: 'shard stock >= 0',
        expected: 0,
        found: s.stock,
        detail: `${s.key} holds ${s.stock}`,
      });
    }
  }
  return { ok: differences.length === 0, differences };
}
