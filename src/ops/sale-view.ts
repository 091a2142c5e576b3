// GET /admin/products/:id's answer, which the dashboard's live view shows as it is: the sale's status
// (settings, units by state and fate, shards, recent changes), its failed writer jobs, and its waiting
// room line and lottery exactly as the public product view shows them.
import type { Kysely } from 'kysely';
import type { Database } from '../db/database.ts';
import { type SaleStatus, saleStatus } from '../inventory/status.ts';
import type { FailedJobs, FailedJobsOf } from '../orders/failed-jobs.ts';
import type { RedisClient } from '../redis/connection.ts';
import type { QueueView } from '../waiting-room/room.ts';

export interface SaleView extends SaleStatus {
  failedJobs: FailedJobs;
  /** GET /api/products/:id's `queue` (WAITING_ROOM=on, while buyers wait or a lottery is set). */
  queue?: QueueView;
}

export interface SaleViewDeps {
  redis: RedisClient;
  db: Kysely<Database>;
  failedJobsOf: FailedJobsOf;
  /** The waiting room's public view of a product's line (WaitingRoom.view). */
  queueView?: (productId: string) => Promise<QueueView | undefined>;
}

export async function saleView(deps: SaleViewDeps, productId: string): Promise<SaleView> {
  const [status, failedJobs] = await Promise.all([
    saleStatus(deps.redis, deps.db, productId),
    deps.failedJobsOf(productId),
  ]);
  // Only for a sale that exists (saleStatus throws UnknownProductError): the room would start a line.
  const queue = await deps.queueView?.(productId);
  return { ...status, failedJobs, ...(queue && { queue }) };
}
