// Trail of admin actions (who changed which sale, from what to what): a row is written before the
// change, completed with its `after` once it is made, and removed only when the change was refused.
import type { Kysely } from 'kysely';
import type { Database } from './database.ts';

export interface AuditEntry {
  actor: string;
  action: string;
  productId?: string | null;
  before?: object | null;
  after?: object | null;
  request?: object | null;
}

// Serialised here because pg would send a JS array as a Postgres array literal, which jsonb rejects.
const json = (value: object | null | undefined): string | null =>
  value === undefined || value === null ? null : JSON.stringify(value);

/** Records one admin action; returns its id (bigserial, as a string). */
export async function writeAudit(db: Kysely<Database>, entry: AuditEntry): Promise<string> {
  const row = await db
    .insertInto('admin_audit')
    .values({
      actor: entry.actor,
      action: entry.action,
      product_id: entry.productId ?? null,
      before: json(entry.before),
      after: json(entry.after),
      request: json(entry.request),
    })
    .returning('id')
    .executeTakeFirstOrThrow();
  return row.id;
}

/** The state after the change, on the row written before it. */
export async function completeAudit(db: Kysely<Database>, id: string, after: object): Promise<void> {
  await db
    .updateTable('admin_audit')
    .set({ after: JSON.stringify(after) })
    .where('id', '=', id)
    .execute();
}

/** Removes the row of a change that was refused (nothing changed, so there is nothing to trail). */
export async function discardAudit(db: Kysely<Database>, id: string): Promise<void> {
  await db.deleteFrom('admin_audit').where('id', '=', id).execute();
}
