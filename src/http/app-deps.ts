// What the HTTP layer is built from: the use cases and stores its routers call, and an optional hook
// that mounts more routes (the benchmark's, from bench/).
import type express from 'express';
import type { Kysely } from 'kysely';
import type { SaleChanges } from '../admin/sale-changes.ts';
import type { Database } from '../db/database.ts';
import type { Catalog } from '../inventory/catalog.ts';
import type { Logger } from '../log.ts';
import type { Metrics } from '../metrics.ts';
import type { FailedJobsOf } from '../orders/failed-jobs.ts';
import type { HandOff } from '../orders/hand-off.ts';
import type { OrderPayments } from '../orders/payments.ts';
import type { PlaceOrder } from '../orders/place-order.ts';
import type { RedisClient } from '../redis/connection.ts';
import type { WaitingRoom } from '../waiting-room/room.ts';
import type { BodyLimits } from './body-limits.ts';
import type { ApiDoors } from './doors.ts';

export interface AppDeps {
  redis: RedisClient;
  db: Kysely<Database>;
  catalog: Catalog;
  orders: PlaceOrder;
  /** Pay and cancel (pay-or-expire). */
  payments: OrderPayments;
  /** The admin's sale changes: put, restock, reshard (audited). */
  changes: SaleChanges;
  metrics: Metrics;
  logger: Logger;
  /** The waiting room (WAITING_ROOM=on): its line is shown on GET /api/products/:productId. */
  room?: WaitingRoom | undefined;
  /** The order queue's failed jobs of a product, shown on GET /admin/products/:productId. */
  failedJobsOf: FailedJobsOf;
  /** The shard locks' service when it is not Redis (LOCK_BACKEND etcd or zookeeper), checked by /readyz. */
  lockService?: { backend: string; ping(): Promise<void> } | undefined;
  /** Mounts more routes, after the service's and before the 404 (an ApiExtension, bound to its parts). */
  extend?: (app: express.Router) => void;
  /** Buyer identity, the payer of /pay and the brake on wrong admin tokens (doors.ts). */
  doors: ApiDoors;
  /** Limits on every request's body (body-limits.ts): its size, and its own timeout. */
  bodyLimits: BodyLimits;
  /** True when /metrics has a port of its own (METRICS_PORT): not served on the API port then. */
  metricsElsewhere?: boolean;
}

/** What an extension of the API may use: the stores and the order hand-off of its process. */
export interface ApiParts {
  redis: RedisClient;
  catalog: Catalog;
  handOff: HandOff;
  maxOrderQuantity: number;
}

/**
 * Routes an entry point adds to the API: the benchmark's endpoints (bench/order/bench-routes.ts, run
 * by bench/order/bench-api.ts). Production entry points add none.
 */
export type ApiExtension = (app: express.Router, parts: ApiParts) => void;
