// The admin's sale changes as one use case (put, restock, reshard), so every caller gets the same
// trail and backstop: each change is audited before it is made, and a put moves Postgres' limit too.

import { LockAcquireTimeoutError } from '@flashsale/lock';
import type { Kysely } from 'kysely';
import { completeAudit, discardAudit, writeAudit } from '../db/audit-repo.ts';
import type { Database } from '../db/database.ts';
import { upsertSaleLimit } from '../db/limits-repo.ts';
import { isCodedError, UnavailableError } from '../errors.ts';
import type { AdminResult, SaleAdmin, SaleSpec } from '../inventory/admin.ts';
import { BusyError } from '../inventory/errors.ts';
import { type SaleStatus, saleStatus } from '../inventory/status.ts';
import type { Logger } from '../log.ts';
import type { RedisClient } from '../redis/connection.ts';
import { AuditUnavailableError, LimitBackstopError } from './errors.ts';

export interface SaleChangesDeps {
  admin: SaleAdmin;
  redis: RedisClient;
  db: Kysely<Database>;
  logger: Logger;
}

/** Who asked for a change, and the change as asked (parsed), for the audit row. */
export interface Requester {
  actor: string;
  request: object;
}

export type ChangeAction = 'put' | 'restock' | 'reshard';

/** Refusals that leave the sale untouched: their audit row goes. Any other failure may have changed it. */
const REFUSALS = new Set(['unknown_product', 'insufficient_stock', 'invalid_request', 'busy']);

export class SaleChanges {
  constructor(private readonly deps: SaleChangesDeps) {}

  /** (Re)creates the sale; Postgres' per-user limit backstop (migrations/0002) follows its limit. */
  async put(productId: string, spec: SaleSpec, by: Requester): Promise<AdminResult & { created: boolean }> {
    const r = await this.audited('put', productId, by, () => this.deps.admin.put(productId, spec));
    await upsertSaleLimit(this.deps.db, productId, r.sale.perUserLimit).catch((err: unknown) => {
      throw new LimitBackstopError(productId, err);
    });
    return r;
  }

  restock(productId: string, delta: number, by: Requester): Promise<AdminResult> {
    return this.audited('restock', productId, by, () => this.deps.admin.restock(productId, delta));
  }

  reshard(productId: string, shards: number, by: Requester): Promise<AdminResult> {
    return this.audited('reshard', productId, by, () => this.deps.admin.reshard(productId, shards));
  }

  /**
   * Writes the audit row (before, request) first, so no change goes unaudited: if it cannot be
   * written, nothing is changed. Then the change, then the row's `after`. A refused change removes its
   * row; a change that failed otherwise (it may have been made, or be finished by recovery) keeps it
   * with no `after`.
   */
  private async audited<T>(
    action: ChangeAction,
    productId: string,
    by: Requester,
    change: () => Promise<T>,
  ): Promise<T> {
    const { redis, db } = this.deps;
    const before = await saleStatus(redis, db, productId).catch(() => null);
    const entry = { ...by, action, productId, before: before && saleSummary(before) };
    const id = await writeAudit(db, entry).catch((err: unknown) => {
      throw new AuditUnavailableError(err);
    });
    let result: T;
    try {
      result = await change();
    } catch (err) {
      const refusal = asRefusal(productId, err);
      if (isCodedError(refusal) && REFUSALS.has(refusal.code)) await this.discard(id);
      throw refusal;
    }
    try {
      await completeAudit(db, id, saleSummary(await saleStatus(redis, db, productId)));
    } catch (err) {
      // The change is made and its row exists (before, request): answering an error would be untrue.
      this.deps.logger.error({ err, auditId: id, action, productId }, 'audit row left without its after');
    }
    return result;
  }

  private async discard(id: string): Promise<void> {
    await discardAudit(this.deps.db, id).catch((err: unknown) =>
      this.deps.logger.warn({ err, auditId: id }, 'audit row of a refused change not removed'),
    );
  }
}

/**
 * The order path's translation of lock errors, for the admin's: a shard lock that stayed busy is
 * `busy` (429), an unreachable lock service is `unavailable` (503).
 */
function asRefusal(productId: string, err: unknown): unknown {
  if (err instanceof LockAcquireTimeoutError) return new BusyError(productId);
  if (isCodedError(err) && (err.code === 'lock_unavailable' || err.code === 'lock_quorum_unavailable'))
    return new UnavailableError('the lock service', err);
  return err;
}

/** A sale's totals as the audit trail and the reconcile answer show them. */
export function saleSummary(s: SaleStatus) {
  const { available, sold, reserved, confirmed, total, generation } = s;
  return { available, sold, reserved, confirmed, total, generation, shards: s.shards.length };
}
