// The expiry sweep, run by every API process (its timed sales) and worker (every sale): expires unpaid
// orders past their deadline, puts returned units back on sale, carries fates to Postgres and claims.
import type { Kysely } from 'kysely';
import type { Database } from '../db/database.ts';
import { recordFate } from '../db/orders-repo.ts';
import { type Fate, lifecycleKeys, PRODUCT_ID_PATTERN } from '../inventory/keys.ts';
import type { Logger } from '../log.ts';
import { every, type Periodic } from '../periodic.ts';
import { type RedisClient, scanKeys } from '../redis/connection.ts';
import { parseOrderId } from './attempt.ts';
import type { BuyerLimits } from './buyer-limit.ts';
import { expireDue } from './lifecycle.ts';
import type { UnitReturns } from './unit-returns.ts';

export interface ExpiryOptions {
  redis: RedisClient;
  db: Kysely<Database>;
  returns: UnitReturns;
  limits: BuyerLimits;
  intervalMs: number;
  /**
   * The products to sweep; default: every product with unpaid orders or unrecorded fates (a SCAN per
   * master). API processes pass the timed sales they know, so an idle process sends Redis nothing.
   */
  products?: () => string[];
  /** Called with the number of orders this process expired. */
  onExpired?: (orders: number) => void;
  logger?: Logger;
}

export interface ExpiryRound {
  expired: number;
  /** Fates recorded in Postgres (and claims given back) this round. */
  settled: number;
}

/** Orders expired per script call: bounds how long one call holds Redis. */
const EXPIRE_BATCH = 200;

const LIFECYCLE_KEY = /^sale:\{([A-Za-z0-9_-]{1,64})\}:(?:due|settle|withdrawn)$/;

/**
 * Products with unpaid orders waiting for their deadline, fates not yet in Postgres, or withdrawn
 * orders whose units wait in `returning` (their shard was retired: withdraw-retired.lua).
 */
async function lifecycleProducts(redis: RedisClient): Promise<string[]> {
  const found = new Set<string>();
  for (const [suffix, type] of [
    ['due', 'zset'],
    ['settle', 'hash'],
    ['withdrawn', 'hash'],
  ] as const) {
    for await (const keys of scanKeys(redis, `sale:{*}:${suffix}`, { type })) {
      for (const key of keys) {
        const productId = LIFECYCLE_KEY.exec(key)?.[1];
        if (productId && PRODUCT_ID_PATTERN.test(productId)) found.add(productId);
      }
    }
  }
  return [...found];
}

/**
 * One sweep of one product: expire what is due, put waiting units back on sale, then record each
 * decided fate on its row and, for expired and cancelled orders, give the buyer's claim back — in that
 * order, so the Postgres per-user backstop never counts a given-back claim (the row says expired or
 * cancelled before the buyer can claim again). A fate whose row does not exist yet waits for the writer.
 */
export async function sweepProduct(
  o: Omit<ExpiryOptions, 'intervalMs'>,
  productId: string,
): Promise<ExpiryRound> {
  let expired = 0;
  let returning = 0;
  for (;;) {
    const r = await expireDue(o.redis, productId, EXPIRE_BATCH);
    expired += r.orders;
    returning = r.returning;
    if (r.orders < EXPIRE_BATCH) break;
  }
  if (expired > 0) o.onExpired?.(expired);
  if (returning > 0) await o.returns.request(productId);
  let settled = 0;
  for (const [orderId, raw] of Object.entries(await o.redis.hgetall(lifecycleKeys(productId).settle))) {
    if (await settleFate(o, productId, orderId, raw)) settled += 1;
  }
  return { expired, settled };
}

type SettleDeps = Pick<ExpiryOptions, 'redis' | 'db' | 'limits'>;

/**
 * Carries one decided fate (its `settle` entry, `raw`) to the order's row and, for an expired or
 * cancelled order, gives the buyer's claim back — row first, so the Postgres per-user backstop never
 * counts a given-back claim. False when the row is not written yet (it waits for the writer).
 */
async function settleFate(o: SettleDeps, productId: string, orderId: string, raw: string): Promise<boolean> {
  const { status, userId } = JSON.parse(raw) as { status: Fate; userId: string };
  if (!(await recordFate(o.db, orderId, status))) return false;
  const ticket = parseOrderId(orderId)?.ticket;
  if (status !== 'paid' && ticket) await o.limits.giveBack(productId, userId, ticket);
  await o.redis.hdel(lifecycleKeys(productId).settle, orderId);
  return true;
}

/**
 * Settles the fate just decided for `orderId` at once (the sweep's step for one order): a cancel's
 * 200 then comes with the buyer's limit already given back. False when there is nothing to settle
 * or its row is not written yet (the sweep settles it then).
 */
export async function settleOrder(o: SettleDeps, productId: string, orderId: string): Promise<boolean> {
  const raw = await o.redis.hget(lifecycleKeys(productId).settle, orderId);
  return raw !== null && settleFate(o, productId, orderId, raw);
}

/** One sweep of every product with lifecycle work; a product that fails (Postgres down) is retried next round. */
export async function sweepExpiry(o: Omit<ExpiryOptions, 'intervalMs'>): Promise<ExpiryRound> {
  const total: ExpiryRound = { expired: 0, settled: 0 };
  for (const productId of o.products ? o.products() : await lifecycleProducts(o.redis)) {
    try {
      const r = await sweepProduct(o, productId);
      total.expired += r.expired;
      total.settled += r.settled;
    } catch (err) {
      o.logger?.warn({ err, productId }, 'expiry sweep of a product failed; will retry');
    }
  }
  return total;
}

export function startExpiry(o: ExpiryOptions): Periodic {
  return every(o.intervalMs, () =>
    sweepExpiry(o)
      .then(() => undefined)
      .catch((err: unknown) => o.logger?.warn({ err }, 'expiry sweep failed; will retry')),
  );
}
