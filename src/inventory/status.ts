// What an operator sees of a sale: its settings, units available, sold (reserved + confirmed + paid),
// orders by fate, each shard and the recent changes, as one consistent picture (reconcile.ts checks it).
import { setTimeout as sleep } from 'node:timers/promises';
import type { Kysely } from 'kysely';
import type { Database, OrderRowStatus } from '../db/database.ts';
import { existingOrderIds, rowStatuses, unitsByStatus } from '../db/orders-repo.ts';
import { type BatchCommand, isCluster, masterOf, type RedisClient, runBatch } from '../redis/connection.ts';
import { type PendingChange, parsePending } from './change.ts';
import { BusyError, UnknownProductError } from './errors.ts';
import { type ChangeRecord, parseChanges } from './history.ts';
import { changesKey, lifecycleKeys, retiredShardsKey, saleKey, shardKeys } from './keys.ts';
import { loadSale, type Sale } from './sale.ts';
import { type SaleSettings, settingsView } from './settings.ts';

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

/** The sale's settings (settings.ts) with its units by state, its shards and its recent changes. */
export interface SaleStatus extends SaleSettings {
  productId: string;
  generation: number;
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
  /** The last generation changes, newest first: who made each (an admin, or the service) and when. */
  changes: ChangeRecord[];
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
  counters: Record<(typeof COUNTERS)[number], number>;
  awaitingPayment: number;
  changes: ChangeRecord[];
}

/** The sale hash's unit and order counters of returns and fates. */
const COUNTERS = ['returning', 'returned', 'paid', 'expired', 'cancelled'] as const;

/** The sale hash's fields a snapshot reads, in this order: the change markers, then the counters. */
const SALE_FIELDS = ['gen', 'total', 'retiredSold', 'pending', ...COUNTERS] as const;

/** The RedisClient side of the status, or null when an admin change ran while it was being read. */
async function readSnapshot(redis: RedisClient, productId: string): Promise<Snapshot | null> {
  const sale = await loadSale(redis, productId);
  if (!sale) throw new UnknownProductError(productId);
  const retired = await redis.smembers(retiredShardsKey(productId));
  const replies = (await runBatch(redis, snapshotCommands(sale, retired))).map(([err, v]) => {
    if (err) throw err;
    return v;
  });
  // Replies in the order of snapshotCommands: shards, reservation hashes, changes, due, settle, sale hash.
  const n = sale.shardKeys.length;
  const shards = (replies.slice(0, n) as (string | null)[][]).map((values, index) => {
    const key = sale.shardKeys[index] as string;
    const view = shardView(index, key, values);
    return view && isCluster(redis) ? { ...view, master: masterOf(redis, key) } : view;
  });
  const [gen, total, retiredSold, pending, ...counts] = replies.at(-1) as (string | null)[];
  if (
    Number(gen ?? 0) !== sale.generation ||
    Number(total ?? 0) !== sale.total ||
    Number(retiredSold ?? 0) !== sale.retiredSold
  ) {
    return null;
  }
  // Retired with no marker: the shard left the list, and was pruned, after we read the list.
  if (!shards.every((s): s is ShardView => s !== null)) return null;
  return {
    sale,
    shards,
    reservations: (replies.slice(n, -4) as string[][]).flatMap((vals) =>
      vals.map((v) => JSON.parse(v) as { orderId: string; quantity: number }),
    ),
    pending: parsePending(pending),
    settling: settlingFates(replies.at(-2) as Record<string, string>),
    awaitingPayment: Number(replies.at(-3) ?? 0),
    changes: parseChanges(replies.at(-4) as string[]),
    counters: Object.fromEntries(COUNTERS.map((c, i) => [c, Number(counts[i] ?? 0)])) as Snapshot['counters'],
  };
}

/**
 * One batch for the whole snapshot: each current shard's stock, sold and retired marker (one MGET in
 * its slot), the reservation hash of every shard current or retired, the recent changes, the
 * payment deadlines, the fates to settle, and last the sale hash, read again to see whether a change ran meanwhile.
 */
function snapshotCommands(sale: Sale, retired: string[]): BatchCommand[] {
  const commands: BatchCommand[] = sale.shardKeys.map((key) => ({
    key,
    queue: (p) => p.mget(key, shardKeys(key).sold, shardKeys(key).retired),
  }));
  // A switch cut off after adding the current shards to the retired set lists them twice.
  for (const key of new Set([...sale.shardKeys, ...retired])) {
    commands.push({ key, queue: (p) => p.hvals(shardKeys(key).reservations) });
  }
  const fates = lifecycleKeys(sale.productId);
  const saleHash = saleKey(sale.productId);
  const changes = changesKey(sale.productId);
  commands.push({ key: changes, queue: (p) => p.lrange(changes, 0, -1) });
  commands.push({ key: fates.due, queue: (p) => p.zcard(fates.due) });
  commands.push({ key: fates.settle, queue: (p) => p.hgetall(fates.settle) });
  commands.push({ key: saleHash, queue: (p) => p.hmget(saleHash, ...SALE_FIELDS) });
  return commands;
}

/** The settle hash (orderId → JSON {status, quantity}) as a map. */
function settlingFates(hash: Record<string, string>): Snapshot['settling'] {
  return new Map(
    Object.entries(hash).map(([orderId, v]) => {
      const { status, quantity } = JSON.parse(v) as { status: string; quantity: number };
      return [orderId, { status, quantity }] as const;
    }),
  );
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
  { sale, shards, reservations, pending, settling, counters, awaitingPayment, changes }: Snapshot,
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
  const { reserved, confirmed, paid } = placeFates(
    {
      reserved: unpersisted.reduce((a, r) => a + r.quantity, 0),
      confirmed: units.confirmed,
      paid: units.paid,
    },
    settling,
    rows,
    new Set(unpersisted.map((r) => r.orderId)),
  );
  return {
    productId: sale.productId,
    generation: sale.generation,
    ...settingsView(sale),
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
    changes,
  };
}

/**
 * Units by state with the fates decided in Redis but not yet on their rows placed where the decision
 * put them: an expired or cancelled order still counts where Postgres shows it (reserved, or a
 * confirmed row) although its units left `sold`; a paid one is still a confirmed row.
 */
function placeFates(
  units: { reserved: number; confirmed: number; paid: number },
  settling: Snapshot['settling'],
  rows: Map<string, OrderRowStatus>,
  unpersisted: Set<string>,
): { reserved: number; confirmed: number; paid: number } {
  let { reserved, confirmed, paid } = units;
  for (const [orderId, fate] of settling) {
    const row = rows.get(orderId);
    if (row !== undefined && row !== 'confirmed') continue;
    if (row === undefined && !unpersisted.has(orderId)) continue;
    if (row === 'confirmed') confirmed -= fate.quantity;
    else reserved -= fate.quantity;
    if (fate.status === 'paid') paid += fate.quantity;
  }
  return { reserved, confirmed, paid };
}
