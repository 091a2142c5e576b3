// The four invariants a partition scenario ends with (issue #26, DESIGN.md §5: 1, 2, 3, 7 and the
// fencing of 5), from the clients' answers, the Postgres rows, the service's own books and the
// commit log: no unit oversold, no 202 lost, no refused request became a row, and each shard's
// fencing tokens never went backwards in commit order.
import type pg from 'pg';
import { until } from '../../harness/async.ts';
import { registeredQueues } from '../../src/orders/queue.ts';
import type { RedisClient } from '../../src/redis/connection.ts';
import {
  check,
  type OrderLog,
  type Outcome,
  type ScenarioResult,
  saleStatus,
  type Targets,
  tally,
} from '../faults/lib.ts';
import type { Commit, CommitLog } from './commit-log.ts';

interface StoredRow {
  id: string;
  user_id: string;
  quantity: number;
  status: string;
  shard_key: string;
  fencing_token: string;
}

/** Waits until every reservation has its row and no order job is waiting; returns the admin status. */
async function drained(
  targets: Targets,
  redis: RedisClient,
  productId: string,
  timeoutMs: number,
): Promise<Record<string, unknown>> {
  let seen = '';
  return until(
    'the writer to catch up',
    async () => {
      const status = await saleStatus(targets, productId);
      const counts = await Promise.all(
        (await registeredQueues(redis)).flatMap((p) => [
          redis.llen(`${p}:orders:wait`),
          redis.llen(`${p}:orders:active`),
          redis.zcard(`${p}:orders:delayed`),
        ]),
      ).catch(() => [1]);
      const pending = counts.reduce((a, b) => a + b, 0);
      seen = `reserved=${status.reserved} returning=${status.returning} jobs=${pending}`;
      return status.reserved === 0 && Number(status.returning ?? 0) === 0 && pending === 0
        ? status
        : undefined;
    },
    { timeoutMs, everyMs: 250, describe: () => seen },
  );
}

/** An answer that says nothing was sold: any 4xx, or 503 `unavailable` (DESIGN.md §4 "Truthful answers"). */
export function refusal(o: Outcome): boolean {
  if (o.kind !== 'answer') return false;
  return (o.status >= 400 && o.status < 500) || (o.status === 503 && o.body.error === 'unavailable');
}

const label = (o: Outcome) =>
  o.kind === 'noAnswer' ? 'no answer' : `${o.status}${o.body.error ? ` ${o.body.error}` : ''}`;

/** Rows whose buyer was refused: each logical order is one user (`u<i>`), sent once, never retried. */
export function rowsBehindRefusals(rows: Pick<StoredRow, 'id' | 'user_id'>[], logs: OrderLog[]) {
  const byUser = new Map(logs.map((l) => [l.userId, l]));
  return rows.flatMap((r) => {
    const attempts = byUser.get(r.user_id)?.attempts ?? [];
    const named = attempts.some((a) => refusal(a) && a.kind === 'answer' && a.body.orderId === r.id);
    const accepted = attempts.some((a) => a.kind === 'answer' && a.status === 202);
    const unknown = attempts.some((a) => !refusal(a) && !(a.kind === 'answer' && a.status < 300));
    if (!named && (accepted || unknown)) return [];
    const told = attempts.map(label).join(' → ') || 'never asked';
    // named: the refusal carried this order's id (NotReplicatedError's 503 does).
    return [{ orderId: r.id, userId: r.user_id, told, named }];
  });
}

/** Commits per shard whose token is below an earlier commit's (rows only: what was persisted). */
export function tokensBackwards(commits: Commit[], rowIds: Set<string>) {
  const newest = new Map<string, Commit>();
  const backwards: { shard: string; orderId: string; token: number; after: string; afterToken: number }[] =
    [];
  for (const c of commits) {
    if (!rowIds.has(c.orderId)) continue;
    const prev = newest.get(c.shardKey);
    if (prev && c.token < prev.token) {
      backwards.push({
        shard: c.shardKey,
        orderId: c.orderId,
        token: c.token,
        after: prev.orderId,
        afterToken: prev.token,
      });
      continue;
    }
    newest.set(c.shardKey, c);
  }
  return backwards;
}

export interface InvariantInput {
  targets: Targets;
  redis: RedisClient;
  pool: pg.Pool;
  commits: CommitLog;
  logs: OrderLog[];
  productId: string;
  /** Units ever put on sale. */
  total: number;
  drainTimeoutMs?: number;
}

/** Checks the four invariants, recording counts, failures (with order ids) and details in `result`. */
export async function checkInvariants(result: ScenarioResult, o: InvariantInput): Promise<void> {
  const t = tally(o.logs);
  result.sent += t.sent;
  result.accepted += t.acceptedIds.size;
  result.noAnswer += t.ambiguous;
  result.details.answers = t.statuses;
  const status = await drained(o.targets, o.redis, o.productId, o.drainTimeoutMs ?? 60_000);
  const rows = (
    await o.pool.query<StoredRow>(
      'select id, user_id, quantity, status, shard_key, fencing_token from orders where product_id = $1',
      [o.productId],
    )
  ).rows;
  result.rows += rows.length;
  const perId = new Map<string, number>();
  for (const r of rows) perId.set(r.id, (perId.get(r.id) ?? 0) + 1);
  const lost = [...t.acceptedIds].filter((id) => !perId.has(id));
  const doubled = [...perId.entries()].filter(([, n]) => n > 1).map(([id]) => id);
  result.lost += lost.length;
  result.doubled += doubled.length;
  check(result, lost.length === 0, `${lost.length} 202s have no row: ${lost.slice(0, 5).join(', ')}`);
  check(
    result,
    doubled.length === 0,
    `${doubled.length} order ids have several rows: ${doubled.slice(0, 5)}`,
  );

  // Invariant 1 from the buyers' side: units told 202 (every order is one unit of one logical order).
  const acceptedUnits = o.logs
    .filter((l) => l.attempts.some((a) => a.kind === 'answer' && a.status === 202))
    .reduce((a, l) => a + l.quantity, 0);
  check(
    result,
    acceptedUnits <= o.total,
    `oversold: ${acceptedUnits} units answered 202 for ${o.total} on sale`,
  );
  const sold = rows.filter((r) => r.status === 'confirmed' || r.status === 'paid');
  const units = sold.reduce((a, r) => a + r.quantity, 0);
  const s = { available: 0, sold: 0, returning: 0, total: 0 };
  for (const k of Object.keys(s) as (keyof typeof s)[]) s[k] = Number(status[k] ?? 0);
  result.oversold += Math.max(0, units - o.total, s.sold - o.total, acceptedUnits - o.total);
  result.details.books = { ...s, rowsUnits: units, onSale: o.total };
  check(result, units <= o.total, `oversold: ${units} units in rows for ${o.total} on sale`);
  check(result, s.sold === units, `Redis counts ${s.sold} units sold, the rows hold ${units}`);
  check(
    result,
    s.available + s.returning + s.sold === s.total && s.total === o.total,
    `conservation: available ${s.available} + returning ${s.returning} + sold ${s.sold} != total ${s.total} (on sale ${o.total})`,
  );

  const refused = rowsBehindRefusals(rows, o.logs);
  result.orphans += refused.length;
  const kinds: Record<string, number> = {};
  for (const r of refused) {
    const kind = `${r.told}${r.named ? ' (the answer named the order)' : ''}`;
    kinds[kind] = (kinds[kind] ?? 0) + 1;
  }
  result.details.rowsBehindRefusals = { byAnswer: kinds, samples: refused.slice(0, 10) };
  check(
    result,
    refused.length === 0,
    `${refused.length} refused requests became rows: ${refused
      .slice(0, 5)
      .map((r) => `${r.orderId} (told ${r.told})`)
      .join('; ')}`,
  );

  const commits = o.commits.firstCommits();
  const ids = new Set(rows.map((r) => r.id));
  const committed = new Set(commits.map((c) => c.orderId));
  const unseen = rows.filter((r) => !committed.has(r.id)).map((r) => r.id);
  const backwards = tokensBackwards(commits, ids);
  result.details.fencing = {
    commits: commits.length,
    unseen: unseen.length,
    backwards: backwards.slice(0, 10),
  };
  if (o.commits.broken.size > 0) result.notes.push(`MONITOR broke on ${[...o.commits.broken].join(', ')}`);
  check(result, unseen.length === 0, `${unseen.length} rows with no commit seen: ${unseen.slice(0, 5)}`);
  check(
    result,
    backwards.length === 0,
    `${backwards.length} commits with a fencing token below an earlier one of their shard: ${backwards
      .slice(0, 3)
      .map((b) => `${b.orderId} token ${b.token} after ${b.after} token ${b.afterToken} (${b.shard})`)
      .join('; ')}`,
  );
  const tokenOf = new Map(commits.map((c) => [c.orderId, c.token]));
  const tokenMismatch = rows.filter((r) => {
    const token = tokenOf.get(r.id);
    return token !== undefined && token !== Number(r.fencing_token);
  });
  check(
    result,
    tokenMismatch.length === 0,
    `${tokenMismatch.length} rows whose fencing_token differs from their commit's: ${tokenMismatch.slice(0, 3).map((r) => r.id)}`,
  );
}
