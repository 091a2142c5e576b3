// One batch of accepted orders into Postgres: the rows in one transaction (row by row after a data
// error, so only the offending order fails), orders lost from Redis refused, then reservations cleared.
import { UnrecoverableError } from 'bullmq';
import type { Kysely } from 'kysely';
import type { Logger } from 'pino';
import { type Database, isConnectionError } from '../db/database.ts';
import { existingOrderIds } from '../db/orders-repo.ts';
import { insertUnlessWithdrawn, withdrawnIds } from '../db/withdrawn-repo.ts';
import { UnavailableError } from '../errors.ts';
import { deleteReservations, presentReservations } from '../inventory/reservations.ts';
import { giveBackReservation } from '../inventory/withdraw.ts';
import type { RedisClient } from '../redis/connection.ts';
import type { FlushOutcome } from './batcher.ts';
import { registerForExpiry } from './lifecycle.ts';
import type { OrderRecord } from './order.ts';

export interface BatchStats {
  /** Jobs in the batch (duplicates of one order included). */
  size: number;
  /** Rows that were new; the rest already existed (replays). */
  inserted: number;
  /** Time from flush start to commit and reservation cleanup. */
  ms: number;
}

/** SQLSTATE class 22 (data exception) / 23 (integrity violation): retrying the same row cannot help. */
function isDataError(err: unknown): boolean {
  const code = (err as { code?: unknown } | null)?.code;
  return typeof code === 'string' && /^2[23]/.test(code);
}

/** Postgres unreachable is a retry (UnavailableError); anything else is thrown as it is. */
function postgresFailure(err: unknown): unknown {
  return isConnectionError(err) ? new UnavailableError('Postgres', err) : err;
}

function uniqueByOrderId(records: OrderRecord[]): OrderRecord[] {
  const byId = new Map(records.map((r) => [r.orderId, r]));
  // One lock order for every batch, so two batches holding the same replayed orders cannot deadlock.
  return [...byId.values()].sort((a, b) => (a.orderId < b.orderId ? -1 : a.orderId > b.orderId ? 1 : 0));
}

const reservationsOf = (records: OrderRecord[]) =>
  records.map((r) => ({ shardKey: r.shardKey, id: r.orderId }));

/**
 * The flush of the writer's Batcher. Its outcome fails single orders (UnrecoverableError: the job
 * goes to the failed set) while the rest succeed; a throw retries every job of the batch, which is
 * safe because a row is idempotent on its order id.
 */
export class RowWriter {
  constructor(
    private readonly db: Kysely<Database>,
    private readonly redis: RedisClient,
    private readonly logger: Logger,
    private readonly onBatch?: (stats: BatchStats) => void,
  ) {}

  /** Persists the batch; returns the error of each order that failed alone (undefined: all done). */
  async flush(records: OrderRecord[]): Promise<FlushOutcome> {
    const started = performance.now();
    const candidates = uniqueByOrderId(records);
    const lost = await this.lostOrders(candidates);
    const unique = candidates.filter((r) => !lost.has(r.orderId));
    let inserted: number;
    let withdrawn: Set<string>;
    try {
      ({ inserted, withdrawn } = await this.db
        .transaction()
        .execute((trx) => insertUnlessWithdrawn(trx, unique)));
    } catch (err) {
      if (!isDataError(err)) {
        this.logger.warn({ err, size: records.length }, 'order batch insert failed; its jobs will retry');
        throw postgresFailure(err);
      }
      this.logger.error({ err, size: records.length }, 'order batch rejected; inserting its rows one by one');
      const { errors, withdrawn } = await this.insertIndividually(unique);
      await this.giveBack(unique.filter((r) => withdrawn.has(r.orderId)));
      await this.clearReservations(unique.filter((r) => !errors.has(r.orderId) && !withdrawn.has(r.orderId)));
      return records.map((r) => lost.get(r.orderId) ?? errors.get(r.orderId));
    }
    await this.giveBack(unique.filter((r) => withdrawn.has(r.orderId)));
    await this.clearReservations(unique.filter((r) => !withdrawn.has(r.orderId)));
    this.onBatch?.({ size: records.length, inserted, ms: performance.now() - started });
    return lost.size > 0 ? records.map((r) => lost.get(r.orderId)) : undefined;
  }

  /** After a data error, inserts row by row so only the offending order fails (withdrawn ones: skipped). */
  private async insertIndividually(
    unique: OrderRecord[],
  ): Promise<{ errors: Map<string, Error>; withdrawn: Set<string> }> {
    const errors = new Map<string, Error>();
    const withdrawn = new Set<string>();
    for (const record of unique) {
      try {
        const one = await this.db.transaction().execute((trx) => insertUnlessWithdrawn(trx, [record]));
        for (const id of one.withdrawn) withdrawn.add(id);
      } catch (err) {
        if (!isDataError(err)) throw postgresFailure(err);
        const message = err instanceof Error ? err.message : String(err);
        errors.set(
          record.orderId,
          new UnrecoverableError(`order ${record.orderId} rejected by Postgres: ${message}`),
        );
      }
    }
    return { errors, withdrawn };
  }

  /**
   * Withdrawn orders (their buyer was told nothing was sold) get no row: their units go back instead,
   * once however often this runs (a reservation a failover brought back, the sweeper's re-send).
   * Redis unreachable: the batch retries.
   */
  private async giveBack(records: OrderRecord[]): Promise<void> {
    if (records.length === 0) return;
    this.logger.warn(
      { count: records.length },
      'withdrawn orders sent to the writer: units given back, no row',
    );
    try {
      for (const r of records) await giveBackReservation(this.redis, r);
    } catch (err) {
      throw new UnavailableError('Redis', err);
    }
  }

  /**
   * Orders whose reservation is gone from Redis and that have no row yet. A reservation leaves its hash
   * only after its row is committed, or when the Redis data holding it is lost: a failover to a replica
   * that had not received it yet (replication is asynchronous unless REDIS_WAIT_REPLICAS), or a Redis
   * without persistence restarted. Its unit is then back in the shard's stock, so a row now could sell
   * that unit twice; such an order fails (failed set, with the reason) instead: an acknowledgement
   * lost, never an oversell. Redis unreachable: the batch retries.
   */
  private async lostOrders(unique: OrderRecord[]): Promise<Map<string, Error>> {
    let present: Set<string>;
    try {
      present = await presentReservations(this.redis, reservationsOf(unique));
    } catch (err) {
      throw new UnavailableError('Redis', err);
    }
    const missing = unique.filter((r) => !present.has(r.orderId)).map((r) => r.orderId);
    if (missing.length === 0) return new Map();
    // A withdrawn order's reservation is gone because its units were given back: not lost.
    const [persisted, withdrawn] = await Promise.all([
      existingOrderIds(this.db, missing),
      withdrawnIds(this.db, missing),
    ]).catch((err: unknown) => {
      throw postgresFailure(err);
    });
    const lost = new Map<string, Error>();
    for (const orderId of missing.filter((id) => !persisted.has(id) && !withdrawn.has(id))) {
      this.logger.error({ orderId }, 'order whose reservation is gone from Redis (failover?) not persisted');
      lost.set(
        orderId,
        new UnrecoverableError(
          `order ${orderId}: its reservation is gone from Redis (lost in a failover?), its unit is back on sale`,
        ),
      );
    }
    return lost;
  }

  /** Best effort: the rows are committed, so a leftover reservation is replayed as a no-op by the sweeper. */
  private async clearReservations(records: OrderRecord[]): Promise<void> {
    try {
      // A reservation is cleared only once its order is registered for expiry (when it has a payment
      // deadline): the API registers it on acceptance, but may have died first.
      await registerForExpiry(this.redis, records);
      const failed = await deleteReservations(this.redis, reservationsOf(records));
      if (failed > 0) this.logger.warn({ failed }, 'could not clear some reservations; the sweeper will');
    } catch (err) {
      this.logger.warn({ err, count: records.length }, 'could not clear reservations; the sweeper will');
    }
  }
}
