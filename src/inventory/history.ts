// A sale's recent generation changes (what changed, who caused it, when), so an operator can tell an
// admin's reshard from the service's own: a capped list in the product's slot, newest first.
import type { RedisClient } from '../redis/connection.ts';
import type { Change } from './change.ts';
import type { SaleEvent } from './events.ts';
import { changesKey } from './keys.ts';

/** Changes kept per sale; older ones are dropped (the audit trail keeps every admin change). */
export const CHANGES_KEPT = 20;

/**
 * Who made a generation change: an admin (PUT, restock, reshard), the sold-out consolidation (a
 * reshard the service made because every shard was short of one order: consolidate.ts), or the
 * return of expired and cancelled orders' units to sale.
 */
export type ChangeCause = 'admin' | 'consolidation' | 'returns';

/** One generation change as recorded when it switched. */
export interface ChangeRecord {
  generation: number;
  kind: SaleEvent['kind'];
  by: ChangeCause;
  /** Shards and units on sale in the new generation. */
  shards: number;
  available: number;
  /** When it switched (ISO 8601, UTC). */
  at: string;
}

/** Records a switched change (after the switch: a crash in between loses only this line of history). */
export async function recordChange(
  redis: RedisClient,
  productId: string,
  change: ChangeRecord,
): Promise<void> {
  const key = changesKey(productId);
  const replies = await redis
    .pipeline()
    .lpush(key, JSON.stringify(change))
    .ltrim(key, 0, CHANGES_KEPT - 1)
    .exec();
  for (const [err] of replies ?? []) if (err) throw err;
}

/** Who caused a change: only reshards can be the service's own, and returns always are. */
export function causeOf(change: Change): ChangeCause {
  if (change.action === 'return') return 'returns';
  return change.action === 'reshard' && change.by === 'consolidation' ? 'consolidation' : 'admin';
}

/** The list's entries (LRANGE replies) as records, newest first. */
export function parseChanges(entries: string[]): ChangeRecord[] {
  return entries.map((e) => JSON.parse(e) as ChangeRecord);
}
