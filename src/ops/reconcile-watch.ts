// The worker's periodic reconcile: every sale's status is checked (available + returning + sold == total,
// sold == reserved + confirmed + paid) and flashsale_reconcile_differences reports how many products
// disagree, so an alert fires on a real difference without anyone calling GET …/reconcile.

import type { Kysely } from 'kysely';
import type { Database } from '../db/database.ts';
import { PRODUCT_ID_PATTERN, saleKey } from '../inventory/keys.ts';
import { reconcile } from '../inventory/reconcile.ts';
import { saleStatus } from '../inventory/status.ts';
import type { Logger } from '../log.ts';
import type { Metrics } from '../metrics.ts';
import { every, type Periodic } from '../periodic.ts';
import { type RedisClient, scanKeys } from '../redis/connection.ts';

/** Products checked per run at most: a run reads each one's reservations, so it is bounded. */
export const RECONCILE_MAX_PRODUCTS = 500;

export interface ReconcileWatchOptions {
  redis: RedisClient;
  db: Kysely<Database>;
  metrics: Metrics;
  intervalMs: number;
  logger?: Logger;
}

/** Product ids of the sale hashes (`sale:{P}`), at most `limit`. */
export async function saleProducts(redis: RedisClient, limit = RECONCILE_MAX_PRODUCTS): Promise<string[]> {
  const found: string[] = [];
  for await (const keys of scanKeys(redis, saleKey('*'), { type: 'hash' })) {
    for (const key of keys) {
      const id = key.slice('sale:{'.length, -1);
      if (PRODUCT_ID_PATTERN.test(id) && key === saleKey(id)) found.push(id);
    }
    if (found.length >= limit) break;
  }
  return found.slice(0, limit);
}

/**
 * Whether the product's reconcile shows differences on two reads in a row: a status is one
 * consistent snapshot, but a second read keeps an unlucky interleaving from ever raising an alert.
 */
export async function differs(redis: RedisClient, db: Kysely<Database>, productId: string): Promise<boolean> {
  for (let read = 0; read < 2; read++) {
    if (reconcile(await saleStatus(redis, db, productId)).ok) return false;
  }
  return true;
}

/** One check of every sale; returns how many products differ. */
export async function reconcileAll(
  o: Pick<ReconcileWatchOptions, 'redis' | 'db' | 'metrics' | 'logger'>,
): Promise<number> {
  const products = await saleProducts(o.redis);
  let differing = 0;
  for (const productId of products) {
    try {
      if (await differs(o.redis, o.db, productId)) {
        differing += 1;
        o.logger?.error({ productId }, 'reconcile found differences (GET /admin/products/:id/reconcile)');
      }
    } catch (err) {
      // A product deleted or busy with an admin change meanwhile: checked again next run.
      o.logger?.debug({ err, productId }, 'reconcile check skipped');
    }
  }
  o.metrics.reconcileDifferences.set(differing);
  o.metrics.reconcileChecked.set(products.length);
  return differing;
}

export function startReconcileWatch(o: ReconcileWatchOptions): Periodic | null {
  if (o.intervalMs === 0) return null;
  return every(o.intervalMs, async () => {
    await reconcileAll(o).catch((err: unknown) =>
      o.logger?.warn({ err }, 'periodic reconcile failed; will retry'),
    );
  });
}
