// What an operator sees of a sale: units available, sold (reserved + confirmed + paid), each shard, and
// a reconcile that checks DESIGN.md §5's conservation with returned units: available + returning + sold
// == total, sold == reserved + confirmed + paid.
import { setTimeout as sleep } from 'node:timers/promises';
import type { Kysely } from 'kysely';
import type { Database } from '../db/database.ts';
import { existingOrderIds, rowStatuses, unitsByStatus } from '../db/orders-repo.ts';
import { type BatchCommand, isCluster, masterOf, type RedisClient, runBatch } from '../redis/connection.ts';
import { type PendingChange, parsePending } from './admin.ts';
import { BusyError, UnknownProductError } from './errors.ts';
import { lifecycleKeys, retiredShardsKey, saleKey, shardKeys } from './keys.ts';
import { loadSale, type Sale } from './sale.ts';

export interface ShardView {
  index: number;
  key: string;
  stock: number;
  sold: number;
  /** Retired by a change that has not switched yet: stock and sold are what the retire recorded. */
  retired?: true;
  /** On a Redis Cluster: the master (`host:port`) serving the shard's slot now. */
  master?: string;
}

export interface SaleStatus {
  productId: string;
  generation: number;
  perUserLimit: number;
  total: number;
  available: number;
  /** Units sold and not given back: reserved + confirmed + paid. */
  sold: number;
  /** Units in reservations not yet persisted (no Postgres row yet). */
  reserved: number;
  /** Units in Postgres rows, not (yet) paid. */
  confirmed: number;
  /** Units of paid orders. */
  paid: number;
  /** Units of expired or cancelled orders on their way back on sale (the next return change takes them). */
  returning: number;
  /** Units of expired or cancelled orders ever given back. */
  returned: number;
  /** Orders by fate (decided in Redis, the one place pay and expire race). */
  orders: { paid: number; expired: number; cancelled: number };
  /** Orders waiting to be paid before their deadline (registered for expiry). */
  awaitingPayment: number;
  /** Reservations whose row already exists (the writer died before clearing them; the sweeper will). */
  staleReservations: number;
  shards: ShardView[];
  /**
   * A change journaled but not switched yet: one in progress, or one whose admin died (the next
   * change of the product, or SaleAdmin.recover, finishes it). Its retired shards still count: their
   * units are in transit to the next generation, so conservation holds throughout.
   */
  pending: PendingChange | null;
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
 * The sale as one consistent picture. Stock, sold and retired marker of a shard are read together
 * (one MGET in the shard's slot): a shard that a change retired without switching yet shows what its
 * retire recorded, so a status taken during a reshard, or after its admin died, never shows stock
 * that was "missing" only because it was in flight between generations. The sale hash is read again
 * after the shards: if the generation switched meanwhile, the read is repeated.
 */
export async function saleStatus(
  redis: RedisClient,
  db: Kysely<Database>,
  productId: string,
): Promise<SaleStatus> {
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
  pending: PendingChange | null;
  /** Fates decided in Redis and not yet recorded in Postgres: orderId → {status, quantity}. */
  settling: Map<string, { status: string; quantity: number }>;
  counters: { returning: number; returned: number; paid: number; expired: number; cancelled: number };
  awaitingPayment: number;
}

/** The RedisClient side of the status, or null when an admin change ran while it was being read. */
async function readSnapshot(redis: RedisClient, productId: string): Promise<Snapshot | null> {
  const sale = await loadSale(redis, productId);
  if (!sale) throw new UnknownProductError(productId);
  const retired = await redis.smembers(retiredShardsKey(productId));
  const commands: BatchCommand[] = sale.shardKeys.map((key) => ({
    key,
    queue: (p) => p.mget(key, shardKeys(key).sold, shardKeys(key).retired),
  }));
  // A switch cut off after adding the current shards to the retired set lists them twice.
  for (const key of new Set([...sale.shardKeys, ...retired])) {
    commands.push({ key, queue: (p) => p.hvals(shardKeys(key).reservations) });
  }
  const fates = lifecycleKeys(productId);
  commands.push({ key: fates.due, queue: (p) => p.zcard(fates.due) });
  commands.push({ key: fates.settle, queue: (p) => p.hgetall(fates.settle) });
  commands.push({
    key: saleKey(productId),
    queue: (p) =>
      p.hmget(
        saleKey(productId),
        'gen',
        'total',
        'retiredSold',
        'pending',
        'returning',
        'returned',
        'paid',
        'expired',
        'cancelled',
      ),
  });
  const replies = (await runBatch(redis, commands)).map(([err, v]) => {
    if (err) throw err;
    return v;
  });
  const n = sale.shardKeys.length;
  const shards = (replies.slice(0, n) as (string | null)[][]).map((values, index) => {
    const key = sale.shardKeys[index] as string;
    const view = shardView(index, key, values);
    return view && isCluster(redis) ? { ...view, master: masterOf(redis, key) } : view;
  });
  const [gen, total, retiredSold, pending, ...counts] = replies.at(-1) as (string | null)[];
  const [returning, returned, paid, expired, cancelled] = counts.map((c) => Number(c ?? 0)) as number[];
  if (
    Number(gen ?? 0) !== sale.generation ||
    Number(total ?? 0) !== sale.total ||
    Number(retiredSold ?? 0) !== sale.retiredSold
  ) {
    return null;
  }
  // Retired with no marker: the shard left the list, and was pruned, after we read the list.
  if (!shards.every((s): s is ShardView => s !== null)) return null;
  const reservations = (replies.slice(n, -3) as string[][]).flatMap((vals) =>
    vals.map((v) => JSON.parse(v) as { orderId: string; quantity: number }),
  );
  const settling = new Map(
    Object.entries(replies.at(-2) as Record<string, string>).map(([orderId, v]) => {
      const { status, quantity } = JSON.parse(v) as { status: string; quantity: number };
      return [orderId, { status, quantity }] as const;
    }),
  );
  return {
    sale,
    shards,
    reservations,
    pending: parsePending(pending),
    settling,
    awaitingPayment: Number(replies.at(-3) ?? 0),
    counters: {
      returning: returning ?? 0,
      returned: returned ?? 0,
      paid: paid ?? 0,
      expired: expired ?? 0,
      cancelled: cancelled ?? 0,
    },
  };
}

/** A current shard from its stock, sold and retired marker; null when it has neither stock nor marker. */
function shardView(index: number, key: string, [stock, sold, marker]: (string | null)[]): ShardView | null {
  if (stock) return { index, key, stock: Number(stock), sold: Number(sold ?? 0) };
  if (!marker) return null;
  const recorded = JSON.parse(marker) as { stock: number; sold: number };
  return { index, key, stock: recorded.stock, sold: recorded.sold, retired: true };
}

async function withPostgres(
  db: Kysely<Database>,
  { sale, shards, reservations, pending, settling, counters, awaitingPayment }: Snapshot,
): Promise<SaleStatus> {
  // One snapshot of Postgres for all questions, so a row committed between them is counted once.
  const [units, persisted, rows] = await db
    .transaction()
    .setIsolationLevel('repeatable read')
    .execute(async (trx) => {
      const byStatus = await unitsByStatus(trx, sale.productId);
      const ids = await existingOrderIds(
        trx,
        reservations.map((r) => r.orderId),
      );
      return [byStatus, ids, await rowStatuses(trx, [...settling.keys()])] as const;
    });
  const unpersisted = reservations.filter((r) => !persisted.has(r.orderId));
  // A fate decided in Redis but not yet on its row: an expired or cancelled order still counts where
  // Postgres shows it (reserved, or a confirmed row) although its units left `sold`; a paid one is
  // still a confirmed row. Counted where the decision put it.
  let reserved = unpersisted.reduce((a, r) => a + r.quantity, 0);
  let { confirmed, paid } = units;
  for (const [orderId, fate] of settling) {
    const row = rows.get(orderId);
    if (row !== undefined && row !== 'confirmed') continue;
    const unpersistedHere = row === undefined && unpersisted.some((r) => r.orderId === orderId);
    if (row === undefined && !unpersistedHere) continue;
    if (fate.status === 'paid') {
      if (row === 'confirmed') {
        confirmed -= fate.quantity;
        paid += fate.quantity;
      } else {
        reserved -= fate.quantity;
        paid += fate.quantity;
      }
    } else if (row === 'confirmed') confirmed -= fate.quantity;
    else reserved -= fate.quantity;
  }
  return {
    productId: sale.productId,
    generation: sale.generation,
    perUserLimit: sale.perUserLimit,
    total: sale.total,
    available: shards.reduce((a, s) => a + s.stock, 0),
    sold: sale.retiredSold + shards.reduce((a, s) => a + s.sold, 0) - counters.returned,
    reserved,
    confirmed,
    paid,
    returning: counters.returning,
    returned: counters.returned,
    orders: { paid: counters.paid, expired: counters.expired, cancelled: counters.cancelled },
    awaitingPayment,
    staleReservations: reservations.length - unpersisted.length,
    shards,
    pending,
  };
}

export function reconcile(status: SaleStatus): { ok: boolean; differences: Difference[] } {
  const differences: Difference[] = [];
  const { available, returning, sold, total, reserved, confirmed, paid } = status;
  if (available + returning + sold !== total) {
    const found = available + returning + sold;
    differences.push({
      check: 'available + returning + sold == total',
      expected: total,
      found,
      detail: `available ${available} + returning ${returning} + sold ${sold} = ${found}, total ${total}`,
    });
  }
  if (sold !== reserved + confirmed + paid) {
    const found = reserved + confirmed + paid;
    differences.push({
      check: 'sold == reserved + confirmed + paid',
      expected: sold,
      found,
      detail: `reserved ${reserved} + confirmed ${confirmed} + paid ${paid} = ${found}, sold ${sold}`,
    });
  }
  if (returning < 0) {
    differences.push({
      check: 'returning >= 0',
      expected: 0,
      found: returning,
      detail: `returning ${returning}`,
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
