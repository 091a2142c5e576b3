// What an operator sees of a sale: units available, sold (reserved + confirmed), each shard, and a
// reconcile that checks DESIGN.md §5's conservation: available + sold == total, sold == reserved + confirmed.
import { setTimeout as sleep } from 'node:timers/promises';
import type { Redis } from 'ioredis';
import type { Kysely } from 'kysely';
import type { Database } from '../db/database.ts';
import { existingOrderIds, sumQuantity } from '../db/orders-repo.ts';
import { BusyError, UnknownProductError } from './errors.ts';
import { retiredShardsKey, saleKey, shardKeys } from './keys.ts';
import { loadSale, type Sale } from './sale.ts';

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

/** A reshard or restock changes the shards under a reader's feet; this many re-reads, then answer busy. */
const SNAPSHOT_ATTEMPTS = 20;

/**
 * The sale as one consistent picture. Stock and sold of a shard are read together (one MGET in the
 * shard's slot), and the sale hash is read again after the shards: if an admin change retired a shard
 * or switched the generation meanwhile, the read is repeated, so a status taken during a reshard never
 * shows stock that was "missing" only because it was in flight between generations.
 */
export async function saleStatus(redis: Redis, db: Kysely<Database>, productId: string): Promise<SaleStatus> {
  for (let attempt = 1; ; attempt++) {
    const snapshot = await readSnapshot(redis, productId);
    if (snapshot) return withPostgres(db, snapshot);
    if (attempt >= SNAPSHOT_ATTEMPTS) throw new BusyError(productId);
    await sleep(Math.min(2 * attempt, 20));
  }
}

interface Snapshot {
  sale: Sale;
  shards: ShardView[];
  reservations: { orderId: string; quantity: number }[];
}

/** The Redis side of the status, or null when an admin change ran while it was being read. */
async function readSnapshot(redis: Redis, productId: string): Promise<Snapshot | null> {
  const sale = await loadSale(redis, productId);
  if (!sale) throw new UnknownProductError(productId);
  const retired = await redis.smembers(retiredShardsKey(productId));
  const p = redis.pipeline();
  for (const key of sale.shardKeys) p.mget(key, shardKeys(key).sold);
  for (const key of [...sale.shardKeys, ...retired]) p.hvals(shardKeys(key).reservations);
  p.hmget(saleKey(productId), 'gen', 'total', 'retiredSold');
  const replies = ((await p.exec()) ?? []).map(([err, v]) => {
    if (err) throw err;
    return v;
  });
  const n = sale.shardKeys.length;
  const pairs = replies.slice(0, n) as [string | null, string | null][];
  // A shard whose stock key is gone was retired after we read the shard list.
  if (pairs.some(([stock]) => stock === null)) return null;
  const [gen, total, retiredSold] = (replies.at(-1) as (string | null)[]).map((v) => Number(v ?? 0));
  if (gen !== sale.generation || total !== sale.total || retiredSold !== sale.retiredSold) return null;
  const shards = sale.shardKeys.map((key, index) => {
    const [stock, sold] = pairs[index] ?? [null, null];
    return { index, key, stock: Number(stock ?? 0), sold: Number(sold ?? 0) };
  });
  const reservations = (replies.slice(n, -1) as string[][]).flatMap((vals) =>
    vals.map((v) => JSON.parse(v) as { orderId: string; quantity: number }),
  );
  return { sale, shards, reservations };
}

async function withPostgres(
  db: Kysely<Database>,
  { sale, shards, reservations }: Snapshot,
): Promise<SaleStatus> {
  // One snapshot of Postgres for both questions, so a row committed between them is counted once.
  const [confirmed, persisted] = await db
    .transaction()
    .setIsolationLevel('repeatable read')
    .execute(async (trx) => {
      const units = await sumQuantity(trx, sale.productId);
      const ids = await existingOrderIds(
        trx,
        reservations.map((r) => r.orderId),
      );
      return [units, ids] as const;
    });
  const pending = reservations.filter((r) => !persisted.has(r.orderId));
  return {
    productId: sale.productId,
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
