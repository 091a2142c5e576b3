// What an order asks the stock reserver for and gets back, and the input reserve.lua is sent for it
// on one shard (its keys, the hold, the deadline and the sale's window).
import type { RedisClock } from '../redis/clock.ts';
import type { InputOf } from '../redis/lua.ts';
import type { ReplicaWait } from '../redis/replica-wait.ts';
import type { ShortLots } from './consolidate.ts';
import { type ShardRef, shardKeys } from './keys.ts';
import type { ShardOutcome } from './replies.ts';
import type { Sale } from './sale.ts';
import type { RESERVE } from './scripts.ts';
import type { ExternalShardLocks } from './shard-locks.ts';

/** What to reserve, and the entry to record for it in the shard's reservation hash. */
export interface ReserveRequest<T extends object> {
  productId: string;
  quantity: number;
  /**
   * Server time (ms) after which no reservation of this request may take effect: reserve.lua refuses
   * it then. Each one is sent with at most 1 s of it left, so a lost reply is settled soon.
   */
  deadline: number;
  /** Re-reads the shards past this process's sold-out verdict (an old one; Catalog.soldOutFor). */
  recheck?: boolean;
  /**
   * The entry to write on the shard chosen (called once per shard tried): its id in the reservation
   * hash and its JSON object, to which the script adds `token` (the fencing token of the hold).
   */
  entry(shard: ShardRef): { id: string; value: T };
}

/** What one reserve() has sent so far (its own, never shared): latest deadline, entries by id. */
export interface Sent<T> {
  deadline: number;
  values: Map<string, T>;
  /** The id of the entry sent last: the one a lost reply leaves in doubt. */
  lastId?: string;
}

/**
 * A reservation must reach Redis within this long of being sent, or it is refused. Keeps the wait
 * before a lost reply can be resolved short; a healthy round trip takes well under a millisecond.
 */
export const SEND_LEASE_MS = 1000;

/** A reservation made: where, under which fencing token, and the entry written. */
export interface Reservation<T extends object> {
  shard: ShardRef;
  id: string;
  value: T;
  token: number;
  /** The latest deadline any reservation of this request was sent with (≤ the request's deadline). */
  sentDeadline: number;
  /**
   * False when the replicas (ReserverOptions.replicas) did not confirm the reservation in time: it is
   * made, but a failover of its master now could still lose it. Always true without `replicas`.
   */
  replicated: boolean;
}

/** One reserve.lua call: the shard, the entry, the deadline it is sent with, and the hold. */
export interface ReserveCall<T extends object> {
  sale: Sale;
  shard: ShardRef;
  quantity: number;
  id: string;
  value: T;
  deadline: number;
  /** Owner id of the hold, or "" to take the lock for the script's run only if it is free. */
  owner: string;
  /** Fencing token of the hold; "" when acquired in the same pipeline (the script reads it). */
  token: number | '';
  /** The shard lock's token counter (LockClient.tokenCounterKey). */
  tokenCounter: string;
  /** The lock service when not Redis: the token is checked against that service's fence. */
  external: ExternalShardLocks | undefined;
}

/** reserve.lua's named input for a call. */
export function reserveInput<T extends object>(c: ReserveCall<T>): InputOf<typeof RESERVE> {
  const k = shardKeys(c.shard.key);
  return {
    lock: k.lock,
    tokenCounter: c.tokenCounter,
    stock: k.stock,
    fence: c.external ? c.external.fenceKey(k.fence) : k.fence,
    sold: k.sold,
    reservations: k.reservations,
    owner: c.owner,
    token: c.token,
    quantity: c.quantity,
    id: c.id,
    entry: JSON.stringify(c.value),
    deadline: c.deadline,
    startsAt: c.sale.window.startsAt ?? 0,
    endsAt: c.sale.window.endsAt ?? 0,
    fenced: c.external ? '1' : '',
  };
}

/** Settings of StockReserver. */
export interface ReserverOptions {
  leaseMs: number;
  waitMs: number;
  clock: RedisClock;
  /**
   * Confirms that replicas of a shard's master hold its reservation before it counts as made (Redis
   * WAIT, grouped per master). Default: none, a reservation counts once its master has it.
   */
  replicas?: ReplicaWait;
  /**
   * Shard locks on etcd or ZooKeeper (LOCK_BACKEND) instead of the Redis lock client: the order takes
   * the lock there, then reserves with the hold's token. Undefined: the Redis locks.
   */
  external?: ExternalShardLocks | undefined;
  /** Observes an order answered 503 because the only stock left is on masters short of replicas. */
  onStranded?: (productId: string, units: number) => void;
  /** Observes each shard attempt (metrics): outcome and whether it was the first shard tried. */
  onShardAttempt?: (outcome: ShardOutcome['kind'], fallback: boolean) => void;
  /**
   * Regroups a product's stock into fewer, larger lots (a live reshard, StockConsolidator): called
   * when an order for q units found no shard holding q while the shards hold q in all. Undefined: such
   * an order is sold_out.
   */
  consolidate?: (short: ShortLots) => Promise<void>;
}
