// The API's wiring: the Redis side of an order (catalog, shard locks, hand-off to the writer), the
// order gate, the Express app and its HTTP server; or, with API_WORKERS > 1, a cluster of those.
import cluster from 'node:cluster';
import { once } from 'node:events';
import { createServer, type Server } from 'node:http';
import { LockClient } from '@flashsale/lock';
import { SaleChanges } from '../admin/sale-changes.ts';
import { ApiCluster } from '../api-cluster.ts';
import { type ApiExtension, createApp } from '../http/app.ts';
import { MAX_BODY_BYTES } from '../http/body-limits.ts';
import { answerClientErrors } from '../http/client-errors.ts';
import { capConnectionsPerAddress } from '../http/connection-cap.ts';
import { apiDoors } from '../http/doors.ts';
import { EventLoopLag } from '../http/loop-lag.ts';
import { OrderGate } from '../http/order-gate.ts';
import { OrderIntake } from '../http/order-intake.ts';
import { SaleAdmin } from '../inventory/admin.ts';
import { Catalog } from '../inventory/catalog.ts';
import { StockConsolidator } from '../inventory/consolidate.ts';
import { StockReserver } from '../inventory/reserve.ts';
import { loadSale } from '../inventory/sale.ts';
import { allQueues } from '../metrics.ts';
import { BuyerLimits } from '../orders/buyer-limit.ts';
import { failedJobsOf } from '../orders/failed-jobs.ts';
import { HandOff } from '../orders/hand-off.ts';
import { PlaceOrder } from '../orders/place-order.ts';
import { closeBull, queuePrefixes, registerQueues } from '../orders/queue.ts';
import { RedisClock } from '../redis/clock.ts';
import { duplicateClient } from '../redis/connection.ts';
import { ReplicaWait } from '../redis/replica-wait.ts';
import { createWaitingRoom, type WaitingRoom } from '../waiting-room/index.ts';
import type { Runtime } from './boot.ts';
import { type DoorParts, streamHolder, withDoor } from './door.ts';
import { startMetricsServer } from './metrics-server.ts';
import { orderQueue, startLifecycle } from './parts.ts';
import { serverOptions } from './server-options.ts';
import { closeServer } from './shutdown.ts';

/**
 * Pending connections the kernel holds before accept() (capped by net.core.somaxconn): a herd of new
 * connections waits in the kernel instead of being dropped. Node's default is 511.
 */
const LISTEN_BACKLOG = 4096;
/**
 * Above this many open connections Node closes new ones at once (a reset for the client). It bounds
 * memory (a few kB per idle connection), set far above what a proxy pool or a load test holds.
 */
const MAX_CONNECTIONS = 16_384;

/** The Redis side of an order: catalog and its events, shard locks, queues and hand-off, server clock. */
async function startOrderPath(rt: Runtime) {
  const { config, metrics, redis, logger } = rt;
  const subscriber = duplicateClient(redis, { maxRetriesPerRequest: null });
  subscriber.on('error', () => {});
  const locks = new LockClient(redis, {
    subscriber: duplicateClient(subscriber),
    onEvent: (e) => metrics.observeLock(e),
  });
  const catalog = new Catalog(redis, subscriber, rt.config.catalog.soldOutRecheckMs);
  await catalog.start();
  // One queue per master on a cluster; registered so the writer consumes every one.
  const prefixes = queuePrefixes(redis);
  await registerQueues(redis, prefixes);
  const queues = prefixes.map((prefix) => orderQueue(rt, prefix));
  metrics.watchQueue(allQueues(queues));
  metrics.watchReservations(redis);
  const handOff = new HandOff(queues, config.handOff);
  const clock = await new RedisClock(redis).start();
  const { waitReplicas, waitTimeoutMs } = config.redis;
  const replicas =
    waitReplicas > 0
      ? new ReplicaWait(redis, waitReplicas, waitTimeoutMs, (short) => {
          metrics.observeShortMasters(short);
          if (short.length > 0)
            logger.warn({ short }, 'Redis masters short of replicas: their shards are skipped');
        })
      : undefined;
  return { subscriber, locks, catalog, queues, handOff, clock, replicas };
}

type OrderPath = Awaited<ReturnType<typeof startOrderPath>>;

/** The order use case over the order path: guarded reservation, buyer limits, hand-off. */
function placeOrders(rt: Runtime, path: OrderPath, limits: BuyerLimits, admin: SaleAdmin): PlaceOrder {
  const { config, metrics, logger, redis, db } = rt;
  const { locks, catalog, handOff, clock, replicas } = path;
  const consolidator = new StockConsolidator(
    admin,
    async (productId) => (await loadSale(redis, productId))?.generation,
    (productId, shards) =>
      logger.info(
        { productId, shards },
        'stock regrouped into fewer shards: an order found every lot short of it',
      ),
  );
  const reserver = new StockReserver(redis, locks, catalog, {
    clock,
    leaseMs: config.locks.leaseMs,
    waitMs: config.locks.waitMs,
    replicas,
    external: rt.lockService,
    onShardAttempt: (outcome, fallback) => metrics.observeShardAttempt(outcome, fallback),
    onStranded: (productId, units) => metrics.observeStranded(productId, units),
    consolidate: (short) => consolidator.run(short),
  });
  return new PlaceOrder({
    redis,
    db,
    catalog,
    reserver,
    limits,
    handOff,
    clock,
    // Named by the order (the client has its id), not the request: a request context would need an
    // AsyncLocalStorage on every request, which taxes every promise of the process.
    onEnqueueError: (err, record) =>
      logger.warn(
        { err, orderId: record.orderId },
        'enqueue failed; the sweeper will enqueue the reservation',
      ),
    onSoldOutFastPath: () => metrics.soldOutFastPath.inc(),
    onWithdrawn: () => metrics.ordersWithdrawn.inc(),
  });
}

/**
 * Admission control and rate limits in front of the orders, fed by the event loop's signals; the
 * waiting room (when on) hands out the capacity admission control has.
 */
function orderGate(
  rt: Runtime,
  catalog: Catalog,
  loop: EventLoopLag,
  room: WaitingRoom | undefined,
): OrderGate {
  const { config, metrics } = rt;
  const gate = new OrderGate({
    admission: config.admission,
    ...config.rateLimits,
    isSoldOut: (productId) => catalog.isSoldOut(productId),
    loop,
    onShed: (reason) => metrics.admissionShed.inc({ reason }),
    onRateLimited: (by) => metrics.rateLimited.inc({ by }),
    onInvalidTicket: () => metrics.ticketsRefused.inc(),
    room,
    floorMs: rt.lockService && (() => rt.lockService?.roundTripMs() ?? 0),
  });
  room?.start(gate.admission);
  if (room) metrics.watchWaitingRoom(() => room.state());
  metrics.watchAdmission(() => gate.admission.state());
  return gate;
}

/**
 * The HTTP server of the app on PORT/HOST, with the order door in front and the per-address
 * connection cap (TRUST_PROXY peers exempt); resolves once listening.
 */
async function listen(rt: Runtime, app: ReturnType<typeof createApp>, parts: DoorParts): Promise<Server> {
  const { config, logger } = rt;
  const listener = withDoor(rt, app, parts);
  const server = Object.assign(createServer(serverOptions(config.http), listener), {
    maxConnections: MAX_CONNECTIONS,
  });
  answerClientErrors(server);
  const { maxConnectionsPerAddress } = config.http;
  if (maxConnectionsPerAddress > 0)
    capConnectionsPerAddress(server, maxConnectionsPerAddress, (a) => parts.doors.trust(a, 0));
  server.listen({ port: config.http.port, host: config.http.host, backlog: LISTEN_BACKLOG });
  await once(server, 'listening');
  const address = server.address();
  logger.info(
    { port: typeof address === 'object' && address ? address.port : config.http.port },
    'api listening',
  );
  return server;
}

/**
 * The HTTP API in this process; `extension` adds routes (the benchmark's; production adds none). Its
 * parts are closed by shutdown(), the server first.
 */
export async function startApi(rt: Runtime, extension?: ApiExtension): Promise<Server> {
  const { config, logger, metrics, redis, db } = rt;
  const path = await startOrderPath(rt);
  const { subscriber, locks, catalog, queues, handOff, clock, replicas } = path;
  const limits = new BuyerLimits(redis);
  const admin = new SaleAdmin(redis, locks, rt.lockService);
  const lifecycle = startLifecycle(rt, admin, limits, () => catalog.timedProducts());
  const lag = new EventLoopLag();
  const room = createWaitingRoom(config.waitingRoom, { redis, catalog, now: () => clock.now() });
  const gate = orderGate(rt, catalog, lag, room);
  const { maxOrderQuantity } = config.http;
  const orders = placeOrders(rt, path, limits, admin);
  const intake = new OrderIntake({ gate, orders, maxOrderQuantity });
  const bodyLimits = { maxBytes: MAX_BODY_BYTES, timeoutMs: config.http.bodyTimeoutMs };
  const doors = apiDoors(config, redis, (braked) =>
    metrics.adminTokenFailures.inc({ braked: String(braked) }),
  );
  const streams = streamHolder(rt, room, { catalog, intake, gate });
  const app = createApp({
    streams,
    redis,
    db,
    catalog,
    orders,
    payments: lifecycle.payments,
    changes: new SaleChanges({ admin, redis, db, logger }),
    lockService: rt.lockService,
    metrics,
    logger,
    room,
    failedJobsOf: (productId) => failedJobsOf(queues, productId),
    extend: extension && ((app) => extension(app, { redis, catalog, handOff, maxOrderQuantity })),
    doors,
    metricsElsewhere: config.http.metricsPort !== undefined,
    bodyLimits,
  });
  // X-Forwarded-For is believed only from TRUST_PROXY's addresses (req.ip for the per-address limit).
  app.set('trust proxy', doors.trust);
  if (config.buyer.auth !== 'none' && config.payments.webhookSecret === undefined) {
    logger.warn(
      'PAYMENT_WEBHOOK_SECRET unset: a buyer marks their own orders paid (set it for sales that take payment)',
    );
  }
  if (config.http.metricsPort !== undefined) await startMetricsServer(rt);
  const server = await listen(rt, app, { gate, intake, doors, streams, bodyLimits });
  // Closers run last-pushed first: stop the server (finishing in-flight requests) before the lock
  // client, hand-off, queue and subscriber those requests use.
  rt.closers.push(
    async () => subscriber.disconnect(),
    () => lifecycle.expiry.close(),
    async () => lag.close(),
    async () => room?.stop(),
    async () => clock.stop(),
    async () => replicas?.close(),
    async () => void (await Promise.all(queues.map(closeBull))),
    () => handOff.close(),
    () => locks.close(),
    () => closeServer(server, config.shutdown.timeoutMs),
    // First: a held stream is a request in flight the server would wait for.
    async () => streams?.close(),
  );
  return server;
}

/**
 * The HTTP API of an entry point: in this process, or with API_WORKERS > 1 (in the cluster's
 * primary) as that many worker processes sharing PORT, which then run startApi themselves.
 */
export async function serveApi(rt: Runtime, extension?: ApiExtension): Promise<void> {
  if (!cluster.isPrimary || rt.config.http.apiWorkers === 1) {
    await startApi(rt, extension);
    return;
  }
  const apis = new ApiCluster(rt.config.http.apiWorkers, rt.logger);
  // Pushed last, so closed first: the workers finish their requests before the writer drains.
  rt.closers.push(() => apis.stop());
  await apis.start();
}
