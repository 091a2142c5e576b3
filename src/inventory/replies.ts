// The inventory scripts' reply codes, and what each means, in one place: a shard outcome for an
// order's reserve.lua, a typed error for an admin script that refused (see scripts.ts).
import { AdminLockLostError } from './errors.ts';
import type { ShardRef } from './keys.ts';

/** Status codes of the guarded shard scripts (reserve.lua, retire-recorded.lua). */
export const ShardStatus = {
  ok: 1,
  insufficient: 0,
  notOwner: -1,
  staleToken: -2,
  retired: -3,
  expired: -4,
  notStarted: -5,
  ended: -6,
  held: -7,
} as const;
export type ShardStatus = (typeof ShardStatus)[keyof typeof ShardStatus];

/** journal.lua's reply when it refuses; any other reply is the generation reserved for the change. */
export const JournalReply = { refused: 0 } as const;

/** switch.lua's replies. */
export const SwitchReply = { switched: 1, superseded: 0 } as const;

/** What one reserve.lua call on a shard meant for the order's walk over the shards. */
export type ShardOutcome =
  | { kind: 'reserved'; shard: ShardRef; id: string; token: number }
  | { kind: 'insufficient'; left: number }
  | { kind: 'busy' }
  | { kind: 'retired' }
  | { kind: 'fenced' }
  | { kind: 'expired' }
  | { kind: 'closed'; why: 'not_started' | 'ended' };

/** Outcomes that end an order's walk over the shards. */
export type Final = Exclude<ShardOutcome, { kind: 'insufficient' } | { kind: 'busy' }>;

/** Whether a shard's outcome ends the order's walk. */
export function settled(o: ShardOutcome): o is Final {
  return o.kind !== 'insufficient' && o.kind !== 'busy';
}

/** The outcome a reserve.lua reply ({status, stockLeft, token}) names. */
export function reserveOutcome(reply: number[], shard: ShardRef, id: string): ShardOutcome {
  const [status = ShardStatus.notOwner, stockLeft = 0, token = 0] = reply;
  switch (status) {
    case ShardStatus.ok:
      return { kind: 'reserved', shard, id, token };
    case ShardStatus.insufficient:
      return { kind: 'insufficient', left: stockLeft };
    case ShardStatus.held:
      return { kind: 'busy' };
    case ShardStatus.retired:
      return { kind: 'retired' };
    case ShardStatus.expired:
      return { kind: 'expired' };
    case ShardStatus.notStarted:
      return { kind: 'closed', why: 'not_started' };
    case ShardStatus.ended:
      return { kind: 'closed', why: 'ended' };
    default:
      // Our hold was not current when the script ran (lease lapsed): nothing was written.
      return { kind: 'fenced' };
  }
}

/** Whether a reserve.lua reply reserved (a resent reservation answers so for its order id). */
export function reserved(reply: number[]): boolean {
  return reply[0] === ShardStatus.ok;
}

/**
 * What a retire-recorded.lua reply ({status, stock, sold}) handed back: retired now or before (the
 * recorded numbers). Throws AdminLockLostError when the admin no longer held the shard's lock.
 */
export function retiredUnits(
  reply: number[],
  productId: string,
  shardKey: string,
): { stock: number; sold: number } {
  const [status, stock = 0, sold = 0] = reply;
  if (status !== ShardStatus.ok && status !== ShardStatus.retired) {
    throw new AdminLockLostError(productId, shardKey);
  }
  return { stock, sold };
}

/**
 * The generation a journal.lua reply reserved. Throws AdminLockLostError when refused: the admin lock
 * lapsed, or another change switched since the caller read the sale.
 */
export function journaledGeneration(reply: number, productId: string, adminLock: string): number {
  if (reply === JournalReply.refused) throw new AdminLockLostError(productId, adminLock);
  return reply;
}

/**
 * Throws AdminLockLostError unless switch.lua switched. Admins are serialised by the admin lock, so a
 * newer generation can only come from one whose lease lapsed.
 */
export function mustHaveSwitched(reply: number, productId: string, saleKey: string): void {
  if (reply !== SwitchReply.switched) throw new AdminLockLostError(productId, saleKey);
}
