// Finishes admin changes whose admin died between retire and switch (the journal in the sale hash's
// `pending` field), from the worker, so orders on that product are not left answering busy.

import type { Logger } from '../log.ts';
import { every, type Periodic } from '../periodic.ts';
import { type RedisClient, runBatch, scanKeys } from '../redis/connection.ts';
import type { SaleAdmin } from './admin.ts';
import { parsePending } from './change.ts';

export interface RecoveryOptions {
  redis: RedisClient;
  admin: SaleAdmin;
  /** A change journaled longer ago than this is taken as abandoned (a live change takes well under a second). */
  ageMs: number;
  intervalMs: number;
  logger?: Logger;
}

const SALE_HASH = /^sale:\{([A-Za-z0-9_-]{1,64})\}$/;

/** Products with a change pending for at least `ageMs`. */
async function abandonedChanges(redis: RedisClient, ageMs: number, now = Date.now()): Promise<string[]> {
  const found: string[] = [];
  for await (const keys of scanKeys(redis, 'sale:{*}', { type: 'hash' })) {
    const sales = keys.flatMap((key) => {
      const productId = SALE_HASH.exec(key)?.[1];
      return productId ? [{ key, productId }] : [];
    });
    const replies = await runBatch(
      redis,
      sales.map((s) => ({ key: s.key, queue: (p) => p.hget(s.key, 'pending') })),
    );
    sales.forEach((s, i) => {
      const [err, raw] = replies[i] ?? [null, null];
      if (err) throw err;
      const pending = parsePending(raw as string | null);
      if (pending && now - pending.since >= ageMs) found.push(s.productId);
    });
  }
  return found;
}

export function startAdminRecovery(o: RecoveryOptions): Periodic {
  // A recovery may wait for the dead admin's locks to lapse; other products must not wait behind it.
  // Shutdown does not wait for them either: a recovery cut short is itself recovered by the next run.
  const inFlight = new Set<string>();
  return every(o.intervalMs, async () => {
    let products: string[];
    try {
      products = await abandonedChanges(o.redis, o.ageMs);
    } catch (err) {
      o.logger?.warn({ err }, 'scan for abandoned admin changes failed; will retry');
      return;
    }
    for (const productId of products) {
      if (inFlight.has(productId)) continue;
      inFlight.add(productId);
      void o.admin
        .recover(productId)
        .then((generation) => {
          if (generation !== null)
            o.logger?.warn({ productId, generation }, 'finished an admin change left pending');
        })
        .catch((err: unknown) =>
          o.logger?.warn({ err, productId }, 'recovering an admin change failed; will retry'),
        )
        .finally(() => inFlight.delete(productId));
    }
  });
}
