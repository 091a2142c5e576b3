// A sale as stored in Redis: the sale hash plus the product->shards list, read in one round trip.
import { type RedisClient, runBatch } from '../redis/connection.ts';
import { NotStartedError, SaleEndedError } from './errors.ts';
import { saleKey, shardListKey } from './keys.ts';

/** Most units a sale may hold in all (`total`); an admin change past it is refused. */
export const MAX_STOCK = 1_000_000_000;

export interface Sale {
  productId: string;
  generation: number;
  /** Stock keys of the current generation, in index order (the product->shards list). */
  shardKeys: string[];
  /** 0 means no per-user limit. */
  perUserLimit: number;
  /** Units ever put on sale (less units removed by negative restocks). */
  total: number;
  /** Units sold by shards that later reshards retired. */
  retiredSold: number;
  /** When orders open and close (epoch ms, RedisClient server time); null: no bound. */
  window: SaleWindow;
  /** Seconds an accepted order has to be paid before it expires; 0: no payment needed. */
  paymentTimeoutSec: number;
  /** Units of expired or cancelled orders not yet back on sale (the next return change takes them). */
  returning: number;
  /** Units of expired or cancelled orders ever given back (no longer sold). */
  returned: number;
}

/** A sale's opening and closing moments (epoch ms, compared with Redis' clock); null: no bound. */
export interface SaleWindow {
  startsAt: number | null;
  endsAt: number | null;
}

/**
 * How far from a window's edge a process refuses on its own. Its `now` is an estimate of Redis' clock
 * (RedisClock, off by about a round trip); nearer an edge, reserve.lua decides by Redis' own TIME, so
 * the opening is exact to that one clock and no order is accepted before it.
 */
const WINDOW_MARGIN_MS = 1000;

/**
 * The refusal of an order at `now` (RedisClock's estimate of Redis' time) clearly outside the sale's
 * window, answered from process memory; undefined inside it or near an edge.
 */
export function windowRefusal(sale: Sale, now: number): NotStartedError | SaleEndedError | undefined {
  const { startsAt, endsAt } = sale.window;
  if (startsAt !== null && now < startsAt - WINDOW_MARGIN_MS) return windowError(sale, 'not_started');
  if (endsAt !== null && now >= endsAt + WINDOW_MARGIN_MS) return windowError(sale, 'ended');
  return undefined;
}

/** The refusal of an order outside the sale's window, as reserve.lua found it. */
export function windowError(sale: Sale, why: 'not_started' | 'ended'): NotStartedError | SaleEndedError {
  return why === 'not_started'
    ? new NotStartedError(sale.productId, sale.window.startsAt ?? 0)
    : new SaleEndedError(sale.productId, sale.window.endsAt ?? 0);
}

export async function loadSale(redis: RedisClient, productId: string): Promise<Sale | null> {
  const replies = await redis
    .pipeline()
    .hgetall(saleKey(productId))
    .lrange(shardListKey(productId), 0, -1)
    .exec();
  const [[hashErr, hash], [listErr, list]] = replies as [
    [Error | null, Record<string, string>],
    [Error | null, string[]],
  ];
  if (hashErr) throw hashErr;
  if (listErr) throw listErr;
  if (!hash.gen || list.length === 0) return null;
  return {
    productId,
    generation: Number(hash.gen),
    shardKeys: list,
    perUserLimit: Number(hash.perUserLimit ?? 0),
    total: Number(hash.total ?? 0),
    retiredSold: Number(hash.retiredSold ?? 0),
    window: { startsAt: optionalMs(hash.startsAt), endsAt: optionalMs(hash.endsAt) },
    paymentTimeoutSec: Number(hash.paymentTimeoutSec ?? 0),
    returning: Number(hash.returning ?? 0),
    returned: Number(hash.returned ?? 0),
  };
}

function optionalMs(raw: string | undefined): number | null {
  return raw ? Number(raw) : null;
}

/** Splits units as evenly as possible over n shards (the first shards take the remainder). */
export function splitEvenly(units: number, n: number): number[] {
  const base = Math.floor(units / n);
  const extra = units - base * n;
  return Array.from({ length: n }, (_, i) => base + (i < extra ? 1 : 0));
}

/** Units left in each of `stockKeys`, in one round trip (per master); null for a shard that no longer exists (retired). */
export async function readShardStocks(
  redis: RedisClient,
  stockKeys: readonly string[],
): Promise<(number | null)[]> {
  const replies = await runBatch(
    redis,
    stockKeys.map((key) => ({ key, queue: (p) => p.get(key) })),
  );
  return replies.map(([err, v]) => {
    if (err) throw err;
    return v === null ? null : Number(v);
  });
}

/** Units available in the sale's current shards (a shard retired meanwhile counts 0). */
export async function availableStock(redis: RedisClient, sale: Sale): Promise<number> {
  const stocks = await readShardStocks(redis, sale.shardKeys);
  return stocks.reduce<number>((a, b) => a + (b ?? 0), 0);
}
