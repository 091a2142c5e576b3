// One order's reserve.lua call on one shard: one script call when the shard's lock is free, acquire +
// reserve + release pipelined after waiting for it, or under a hold on etcd or ZooKeeper.
import { LockAcquireTimeoutError, type LockClient, type LockHandle } from '../lock/index.ts';
import type { RedisClock } from '../redis/clock.ts';
import type { RedisClient } from '../redis/connection.ts';
import type { InputOf } from '../redis/lua.ts';
import { type ShardRef, shardKeys } from './keys.ts';
import { fromLockError } from './lock-errors.ts';
import { reserved, reserveOutcome, type ShardOutcome } from './replies.ts';
import type { Sale } from './sale.ts';
import { RESERVE } from './scripts.ts';
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
}

/**
 * A reservation must reach Redis within this long of being sent, or it is refused. Keeps the wait
 * before a lost reply can be resolved short; a healthy round trip takes well under a millisecond.
 */
export const SEND_LEASE_MS = 1000;

export interface ShardReserverOptions {
  leaseMs: number;
  clock: RedisClock;
  /** Shard locks on etcd or ZooKeeper (LOCK_BACKEND); undefined: the Redis locks. */
  external?: ExternalShardLocks | undefined;
}

type ReserveInput = InputOf<typeof RESERVE>;

/** Reserves on one shard at a time for StockReserver, which walks the shards. */
export class ShardReserver {
  constructor(
    private readonly redis: RedisClient,
    private readonly locks: LockClient,
    private readonly options: ShardReserverOptions,
  ) {
    // runGuarded queues reserve.lua on a pipeline of the lock client's connection (the same one in
    // the service), which only takes commands defined on its client beforehand.
    RESERVE.define(redis);
  }

  /**
   * Tries shard `index` of the sale, waiting up to `waitMs` for its lock (0: only if free), and
   * records the entry sent in `sent`. Lock errors become the service's (fromLockError).
   */
  async attempt<T extends object>(
    sale: Sale,
    index: number,
    req: ReserveRequest<T>,
    sent: Sent<T>,
    waitMs: number,
  ): Promise<ShardOutcome> {
    const shard: ShardRef = {
      productId: sale.productId,
      generation: sale.generation,
      index,
      key: sale.shardKeys[index] as string,
    };
    const { id, value } = req.entry(shard);
    sent.values.set(id, value);
    const input = (owner: string, token: number | '') =>
      this.input(sale, shard, req, sent, { id, value, owner, token });
    const { external } = this.options;
    const reply = external
      ? await this.underExternalHold(external, shard, waitMs, input)
      : waitMs === 0
        ? // Not waiting: one script call reserves if nobody holds the lock, else the shard is busy. No
          // acquire, lease or release is needed, since the script's run is atomic (see reserve.lua).
          await RESERVE.run(this.redis, input('', ''))
        : await this.underRedisHold(shard, waitMs, input);
    return reply ? reserveOutcome(reply, shard, id) : { kind: 'busy' };
  }

  /** reserve.lua's input for a hold (`owner`, `token`), or without one (""): take the lock if free. */
  private input<T extends object>(
    sale: Sale,
    shard: ShardRef,
    req: ReserveRequest<T>,
    sent: Sent<T>,
    hold: { id: string; value: T; owner: string; token: number | '' },
  ): ReserveInput {
    const k = shardKeys(shard.key);
    const { external } = this.options;
    const deadline = Math.min(req.deadline, this.options.clock.now() + SEND_LEASE_MS);
    sent.deadline = Math.max(sent.deadline, deadline);
    return {
      lock: k.lock,
      tokenCounter: this.locks.tokenCounterKey(k.lock),
      stock: k.stock,
      fence: external ? external.fenceKey(k.fence) : k.fence,
      sold: k.sold,
      reservations: k.reservations,
      owner: hold.owner,
      token: hold.token,
      quantity: req.quantity,
      id: hold.id,
      entry: JSON.stringify(hold.value),
      deadline,
      startsAt: sale.window.startsAt ?? 0,
      endsAt: sale.window.endsAt ?? 0,
      fenced: external ? '1' : '',
    };
  }

  /** Waits for the Redis lock, then acquire + reserve + release in one pipeline; null: still busy. */
  private async underRedisHold(
    shard: ShardRef,
    waitMs: number,
    input: (owner: string, token: number | '') => ReserveInput,
  ): Promise<number[] | null> {
    try {
      const replies = await this.locks.runGuarded(
        shardKeys(shard.key).lock,
        {
          leaseMs: this.options.leaseMs,
          waitMs,
          // A re-sent reservation answers "reserved" for its order id even when its re-sent acquire lost.
          settled: (replies) => reserved(RESERVE.parse(replies[0])),
        },
        (pipeline, hold) => {
          RESERVE.run(pipeline, input(hold.owner, hold.token ?? ''));
        },
      );
      return RESERVE.parse(replies[0]);
    } catch (err) {
      if (err instanceof LockAcquireTimeoutError) return null;
      throw fromLockError(err, shard.productId, 'Redis');
    }
  }

  /**
   * A shard whose lock is on etcd or ZooKeeper: take it (waitMs 0: only if free and nobody queued),
   * reserve with the hold's token (reserve.lua refuses a token older than the shard's fence), and
   * release without holding up the answer: two round trips for the order, the release a third.
   * Null: busy.
   */
  private async underExternalHold(
    external: ExternalShardLocks,
    shard: ShardRef,
    waitMs: number,
    input: (owner: string, token: number) => ReserveInput,
  ): Promise<number[] | null> {
    let hold: LockHandle | null;
    try {
      hold = await external.locks.tryAcquire(shardKeys(shard.key).lock, {
        waitMs,
        leaseMs: this.options.leaseMs,
      });
    } catch (err) {
      throw fromLockError(err, shard.productId, external.backend);
    }
    if (!hold) return null;
    try {
      return await RESERVE.run(this.redis, input(hold.owner, hold.token));
    } finally {
      hold.release().catch(() => {
        // Lost or unreachable: the hold ends with its lease (or the client's session) anyway.
      });
    }
  }
}
