// Process bootstrap shared by the entry points (main = api + writer, api, worker): validated config,
// connections checked up front (one clear line when Redis or Postgres is not there), migrations,
// and graceful shutdown on SIGTERM/SIGINT that finishes in-flight requests and writer batches.
import cluster from 'node:cluster';
import { once } from 'node:events';
import { createServer, type Server, type ServerResponse } from 'node:http';
import type { Kysely } from 'kysely';
import { SaleChanges } from './admin/sale-changes.ts';
import { ApiCluster } from './api-cluster.ts';
import { type Config, ConfigError, loadConfig, redactUrl } from './config.ts';
import { checkDatabase, createDatabase, type Database } from './db/database.ts';
import { migrateToLatest } from './db/migrate.ts';
import { type ApiExtension, createApp } from './http/app.ts';
import { answerClientErrors } from './http/client-errors.ts';
import { capConnectionsPerAddress } from './http/connection-cap.ts';
import { apiDoors } from './http/doors.ts';
import { EventLoopLag } from './http/loop-lag.ts';
import { OrderGate } from './http/order-gate.ts';
import { withShedLane } from './http/shed-lane.ts';
import { SaleAdmin } from './inventory/admin.ts';
import { Catalog } from './inventory/catalog.ts';
import { startAdminRecovery } from './inventory/recovery.ts';
import { StockReserver } from './inventory/reserve.ts';
import { ExternalShardLocks } from './inventory/shard-locks.ts';
import { LockClient } from './lock/index.ts';
import { createLogger, type Logger, requestLogger } from './log.ts';
import { allQueues, createMetrics, type Metrics } from './metrics.ts';
import { startReconcileWatch } from './ops/reconcile-watch.ts';
import { BuyerLimits } from './orders/buyer-limit.ts';
import { startExpiry } from './orders/expiry.ts';
import { failedJobsOf } from './orders/failed-jobs.ts';
import { HandOff } from './orders/hand-off.ts';
import { OrderPayments } from './orders/payments.ts';
import { PlaceOrder } from './orders/place-order.ts';
import {
  closeBull,
  createOrderQueue,
  type OrderQueue,
  queuePrefixes,
  registeredQueues,
  registerQueues,
} from './orders/queue.ts';
import { startSweeper } from './orders/sweeper.ts';
import { UnitReturns } from './orders/unit-returns.ts';
import { startWriter } from './orders/writer.ts';
import { every } from './periodic.ts';
import { RedisClock } from './redis/clock.ts';
import {
  createRedisClient,
  describeTarget,
  duplicateClient,
  type RedisClient,
  type RedisTarget,
} from './redis/connection.ts';
import { ReplicaWait } from './redis/replica-wait.ts';
import { createWaitingRoom } from './waiting-room/index.ts';

export class StartupError extends Error {}

export interface Runtime {
  config: Config;
  logger: Logger;
  metrics: Metrics;
  redis: RedisClient;
  /** Where Redis is (REDIS_URL or REDIS_CLUSTER_NODES): BullMQ objects connect to it on their own. */
  target: RedisTarget;
  db: Kysely<Database>;
  /** The shard locks' service when LOCK_BACKEND is etcd or zookeeper (connected at boot). */
  lockService: ExternalShardLocks | undefined;
  closers: Array<() => Promise<unknown>>;
}

/** The Redis of the configuration: the cluster of REDIS_CLUSTER_NODES, else the server of REDIS_URL. */
export function redisTarget(config: Config): RedisTarget {
  return config.REDIS_CLUSTER_NODES ? { nodes: config.REDIS_CLUSTER_NODES } : { url: config.REDIS_URL };
}

/** Redis connection for request work: fail fast (503) rather than queue commands while Redis is away. */
async function connectRedis(target: RedisTarget, name: string): Promise<RedisClient> {
  const redis = createRedisClient(target, {
    maxRetriesPerRequest: 1,
    connectionName: name,
    lazyConnect: true,
  });
  redis.on('error', () => {
    // ioredis reconnects by itself; requests meanwhile fail with 503 and /readyz reports it.
  });
  try {
    await redis.connect();
    await redis.ping();
  } catch {
    redis.disconnect();
    throw new StartupError(
      'nodes' in target
        ? `Redis Cluster is unreachable at ${describeTarget(target)}: start the cluster or set REDIS_CLUSTER_NODES`
        : `Redis is unreachable at ${target.url}: start redis-server or set REDIS_URL`,
    );
  }
  return redis;
}

/** The shard locks' service of LOCK_BACKEND when it is not Redis; a clear startup error when unreachable. */
async function connectLockService(config: Config, metrics: Metrics): Promise<ExternalShardLocks | undefined> {
  try {
    return await ExternalShardLocks.connect(config, { onEvent: (e) => metrics.observeLock(e) });
  } catch (err) {
    const where = {
      redis: undefined,
      etcd: { service: 'etcd', at: config.ETCD_ENDPOINTS.join(','), variable: 'ETCD_ENDPOINTS' },
      zookeeper: { service: 'ZooKeeper', at: config.ZOOKEEPER_CONNECT, variable: 'ZOOKEEPER_CONNECT' },
    }[config.LOCK_BACKEND];
    if (!where) throw err;
    throw new StartupError(
      `${where.service} is unreachable at ${where.at}: start ${where.service} or set ${where.variable} (LOCK_BACKEND=${config.LOCK_BACKEND})`,
    );
  }
}

export async function boot(role: string, env: NodeJS.ProcessEnv = process.env): Promise<Runtime> {
  let config: Config;
  try {
    config = loadConfig(env);
  } catch (err) {
    if (err instanceof ConfigError) throw new StartupError(err.message);
    throw err;
  }
  const logger = createLogger(config.LOG_LEVEL);
  if (config.devToken) logger.warn('ADMIN_TOKEN not set: using the development token "dev-admin-token"');
  const target = redisTarget(config);
  const redis = await connectRedis(target, `flashsale-${role}`);
  const db = createDatabase(config.DATABASE_URL);
  try {
    await checkDatabase(db);
  } catch {
    redis.disconnect();
    await db.destroy().catch(() => {});
    throw new StartupError(
      `Postgres is unreachable at ${redactUrl(config.DATABASE_URL)}: start PostgreSQL or set DATABASE_URL`,
    );
  }
  // Before anything is written: a start refused for an unreachable lock service changes nothing.
  const metrics = createMetrics();
  let lockService: ExternalShardLocks | undefined;
  try {
    lockService = await connectLockService(config, metrics);
  } catch (err) {
    redis.disconnect();
    await db.destroy().catch(() => {});
    throw err;
  }
  // Several instances may start at once: the migrator takes a lock in Postgres.
  await migrateToLatest(db);
  // Closers run last-pushed first: the lock service closes after everything that uses it.
  const closers: Array<() => Promise<unknown>> = lockService ? [async () => lockService.close()] : [];
  return { config, logger, metrics, redis, target, db, lockService, closers };
}

/**
 * HTTP server limits, chosen for overload (README, "Connections under overload"): a refused order
 * must be an answer (429 + Retry-After), never a reset connection.
 * - keepAliveTimeout 65 s: longer than a load balancer's idle timeout (nginx 60 s), so the proxy
 *   always closes an idle connection first and never sends on one this server just closed. (Node
 *   times a request's headers from its first byte, so an idle keep-alive connection is not cut by
 *   headersTimeout.)
 * - headersTimeout (HTTP_HEADERS_TIMEOUT_MS, 12 s) below requestTimeout (HTTP_REQUEST_TIMEOUT_MS,
 *   30 s), checked every HTTP_CONNECTIONS_CHECK_MS (1 s): a client that trickles its headers or body
 *   is cut (slowloris), while a request whose bytes merely sat in a socket buffer during a busy
 *   moment is not. Given to createServer, so Node's own check that headers < request runs.
 */
function serverOptions(config: Config) {
  return {
    keepAliveTimeout: 65_000,
    headersTimeout: config.HTTP_HEADERS_TIMEOUT_MS,
    requestTimeout: config.HTTP_REQUEST_TIMEOUT_MS,
    connectionsCheckingInterval: config.HTTP_CONNECTIONS_CHECK_MS,
  };
}
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

/** The HTTP API in this process; `extension` adds routes (the benchmark's; production adds none). */
export async function startApi(rt: Runtime, extension?: ApiExtension): Promise<Server> {
  const { config, logger, metrics, redis, db } = rt;
  const subscriber = duplicateClient(redis, { maxRetriesPerRequest: null });
  subscriber.on('error', () => {});
  const locks = new LockClient(redis, {
    subscriber: duplicateClient(subscriber),
    onEvent: (e) => metrics.observeLock(e),
  });
  const external = rt.lockService;
  const catalog = new Catalog(redis, subscriber);
  await catalog.start();
  // One queue per master on a cluster; registered so the writer consumes every one.
  const prefixes = queuePrefixes(redis);
  await registerQueues(redis, prefixes);
  const queues = prefixes.map((prefix) => orderQueue(rt, prefix));
  metrics.watchQueue(allQueues(queues));
  metrics.watchReservations(redis);
  const handOff = new HandOff(queues, {
    maxBatch: config.HANDOFF_MAX_BATCH,
    maxWaitMs: config.HANDOFF_MAX_WAIT_MS,
  });
  const clock = await new RedisClock(redis).start();
  const replicas =
    config.REDIS_WAIT_REPLICAS > 0
      ? new ReplicaWait(redis, config.REDIS_WAIT_REPLICAS, config.REDIS_WAIT_TIMEOUT_MS)
      : undefined;
  const reserver = new StockReserver(redis, locks, catalog, {
    clock,
    leaseMs: config.LOCK_LEASE_MS,
    waitMs: config.LOCK_WAIT_MS,
    replicas,
    external,
    onShardAttempt: (outcome, fallback) => metrics.observeShardAttempt(outcome, fallback),
  });
  const limits = new BuyerLimits(redis);
  const admin = new SaleAdmin(redis, locks, external);
  const lifecycle = startLifecycle(rt, admin, limits, () => catalog.timedProducts());
  const orders = new PlaceOrder({
    redis,
    db,
    catalog,
    reserver,
    limits,
    handOff,
    clock,
    onEnqueueError: (err, record) =>
      requestLogger(logger).warn(
        { err, orderId: record.orderId },
        'enqueue failed; the sweeper will enqueue the reservation',
      ),
    onSoldOutFastPath: () => metrics.soldOutFastPath.inc(),
  });
  const lag = new EventLoopLag();
  const room = createWaitingRoom(config, { redis, catalog, now: () => clock.now() });
  const gate = new OrderGate({
    admission: {
      initialLimit: config.ADMISSION_LIMIT,
      minLimit: config.ADMISSION_MIN_LIMIT,
      maxLimit: config.ADMISSION_MAX_LIMIT,
      targetMs: config.ADMISSION_TARGET_MS,
      queueMs: config.ADMISSION_QUEUE_MS,
      overloadQueueMs: config.ADMISSION_OVERLOAD_QUEUE_MS,
      maxQueue: config.ADMISSION_MAX_QUEUE,
      maxLagMs: config.ADMISSION_MAX_LAG_MS,
      maxUtilization: config.ADMISSION_MAX_UTILIZATION,
    },
    perUser: config.RATE_LIMIT_PER_USER,
    perAddress: config.RATE_LIMIT_PER_IP,
    isSoldOut: (productId) => catalog.isSoldOut(productId),
    loop: lag,
    onShed: (reason) => metrics.admissionShed.inc({ reason }),
    onRateLimited: (by) => metrics.rateLimited.inc({ by }),
    room,
  });
  room?.start(gate.admission);
  metrics.watchAdmission(() => gate.admission.state());
  const app = createApp({
    redis,
    db,
    catalog,
    orders,
    payments: lifecycle.payments,
    changes: new SaleChanges({ admin, redis, db, logger }),
    lockService: external,
    metrics,
    logger,
    adminToken: config.ADMIN_TOKEN,
    maxOrderQuantity: config.MAX_ORDER_QUANTITY,
    gate,
    room,
    failedJobsOf: (productId) => failedJobsOf(queues, productId),
    extend:
      extension &&
      ((app) => extension(app, { redis, catalog, handOff, maxOrderQuantity: config.MAX_ORDER_QUANTITY })),
    doors: apiDoors({
      adminToken: config.ADMIN_TOKEN,
      buyerAuth: config.buyerAuth,
      jwt: {
        secret: config.BUYER_JWT_SECRET,
        publicKeyPem: config.BUYER_JWT_PUBLIC_KEY,
        issuer: config.BUYER_JWT_ISSUER,
        audience: config.BUYER_JWT_AUDIENCE,
        clockSkewSeconds: config.BUYER_JWT_CLOCK_SKEW_S,
      },
      paymentWebhookSecret: config.PAYMENT_WEBHOOK_SECRET,
      adminFailures: config.ADMIN_AUTH_FAILURES,
    }),
    metricsElsewhere: config.METRICS_PORT !== undefined,
  });
  // X-Forwarded-For is believed only from TRUST_PROXY's addresses (req.ip for the per-address limit).
  app.set('trust proxy', config.TRUST_PROXY);
  if (config.buyerAuth !== 'none' && config.PAYMENT_WEBHOOK_SECRET === undefined) {
    logger.warn(
      'PAYMENT_WEBHOOK_SECRET unset: a buyer marks their own orders paid (set it for sales that take payment)',
    );
  }
  const listener = withShedLane(app, { gate, onShed: () => metrics.orders.inc({ outcome: 'busy' }) });
  const server = Object.assign(createServer(serverOptions(config), listener), {
    maxConnections: MAX_CONNECTIONS,
  });
  answerClientErrors(server);
  if (config.HTTP_MAX_CONNECTIONS_PER_ADDRESS > 0) {
    const trusted = app.get('trust proxy fn') as (address: string, hop: number) => boolean;
    capConnectionsPerAddress(server, config.HTTP_MAX_CONNECTIONS_PER_ADDRESS, (a) => trusted(a, 0));
  }
  if (config.METRICS_PORT !== undefined) await startMetricsServer(rt, config.METRICS_PORT);
  server.listen({ port: config.PORT, host: config.HOST, backlog: LISTEN_BACKLOG });
  await once(server, 'listening');
  const address = server.address();
  logger.info({ port: typeof address === 'object' && address ? address.port : config.PORT }, 'api listening');
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
    () => closeServer(server, rt.config.SHUTDOWN_TIMEOUT_MS),
  );
  return server;
}

/**
 * Pay-or-expire in this process: the pay/cancel use case and the expiry sweep, sharing one coalesced
 * return of units per product. Every API process (over the timed sales it has seen: `products`) and
 * worker (over every sale) runs the sweep, and the claim in Redis makes each expiry happen once, so
 * expiry goes on while either kind of process is down.
 */
function startLifecycle(rt: Runtime, admin: SaleAdmin, limits: BuyerLimits, products?: () => string[]) {
  const { redis, db, metrics, logger, config } = rt;
  const returns = new UnitReturns(admin, (units) => metrics.unitsReturned.inc(units));
  const payments = new OrderPayments({
    redis,
    db,
    returns,
    onFate: (fate) => metrics.orderFates.inc({ fate }),
    logger,
  });
  const expiry = startExpiry({
    redis,
    db,
    returns,
    limits,
    products,
    intervalMs: config.EXPIRY_INTERVAL_MS,
    onExpired: (orders) => metrics.orderFates.inc({ fate: 'expired' }, orders),
    logger,
  });
  return { payments, expiry };
}

/**
 * The HTTP API of an entry point: in this process, or with API_WORKERS > 1 (in the cluster's
 * primary) as that many worker processes sharing PORT, which then run startApi themselves.
 */
export async function serveApi(rt: Runtime, extension?: ApiExtension): Promise<void> {
  if (!cluster.isPrimary || rt.config.API_WORKERS === 1) {
    await startApi(rt, extension);
    return;
  }
  const apis = new ApiCluster(rt.config.API_WORKERS, rt.logger);
  // Pushed last, so closed first: the workers finish their requests before the writer drains.
  rt.closers.push(() => apis.stop());
  await apis.start();
}

/**
 * Stops accepting connections and finishes in-flight requests. Keep-alive clients that keep sending
 * would hold server.close() open forever, so responses now carry `Connection: close`, idle sockets
 * are closed at once, and whatever is left is cut at half the shutdown budget.
 */
function closeServer(server: Server, budgetMs: number): Promise<void> {
  server.on('request', (_req, res: ServerResponse) => res.setHeader('Connection', 'close'));
  const closed = new Promise<void>((resolve) => server.close(() => resolve()));
  server.closeIdleConnections();
  const cut = setTimeout(() => server.closeAllConnections(), budgetMs / 2);
  cut.unref();
  return closed.finally(() => clearTimeout(cut));
}

/** A queue of the orders under `prefix`, its errors logged. */
function orderQueue(rt: Runtime, prefix: string): OrderQueue {
  const queue = createOrderQueue(rt.target, prefix);
  queue.on('error', (err) => rt.logger.warn({ err, prefix }, 'order queue error'));
  return queue;
}

export async function startWorker(rt: Runtime): Promise<void> {
  const { config, logger, metrics, db, redis } = rt;
  // The queues of this slot map and every one an API process registered (maybe on an older map).
  const own = queuePrefixes(redis);
  await registerQueues(redis, own);
  const prefixes = [...new Set([...own, ...(await registeredQueues(redis))])];
  const writer = startWriter({
    connection: rt.target,
    prefixes,
    db,
    concurrency: config.WRITER_CONCURRENCY,
    batchSize: config.WRITER_BATCH_SIZE,
    batchMaxWaitMs: config.WRITER_BATCH_MS,
    lockDurationMs: config.WRITER_LOCK_MS,
    stalledIntervalMs: config.WRITER_STALLED_INTERVAL_MS,
    logger,
    onBatch: (s) => {
      metrics.writerBatchSize.observe(s.size);
      metrics.writerBatchSeconds.observe(s.ms / 1000);
    },
  });
  // Queues registered later (an API process started on a changed slot map) are consumed too.
  const queueWatch = every(config.SWEEP_INTERVAL_MS, () =>
    registeredQueues(redis)
      .then((found) => writer.consume(found))
      .catch((err: unknown) => logger.warn({ err }, 'reading the order queues failed; will retry')),
  );
  const queues = writer.workers().map((w) => orderQueue(rt, w.opts.prefix ?? own[0] ?? ''));
  const queue = queues[0] as OrderQueue;
  metrics.watchQueue(allQueues(queues));
  metrics.watchReservations(redis);
  const sweeper = startSweeper({
    redis,
    db,
    queue,
    ageMs: config.SWEEP_AGE_MS,
    intervalMs: config.SWEEP_INTERVAL_MS,
    logger,
  });
  const locks = new LockClient(redis);
  const external = rt.lockService;
  const admin = new SaleAdmin(redis, locks, external);
  const { expiry } = startLifecycle(rt, admin, new BuyerLimits(redis));
  const recovery = startAdminRecovery({
    redis,
    admin,
    ageMs: config.SWEEP_AGE_MS,
    intervalMs: config.SWEEP_INTERVAL_MS,
    logger,
  });
  const reconcileWatch = startReconcileWatch({
    redis,
    db,
    metrics,
    intervalMs: config.RECONCILE_INTERVAL_MS,
    logger,
  });
  if (reconcileWatch) rt.closers.push(() => reconcileWatch.close());
  logger.info('writer, sweeper and admin-change recovery started');
  rt.closers.push(
    () => locks.close(),
    () => expiry.close(),
    () => recovery.close(),
    async () => void (await Promise.all(queues.map(closeBull))),
    () => writer.close(),
    () => queueWatch.close(),
    () => sweeper.close(),
  );
}

/**
 * GET /metrics and /healthz on `port`: PORT for a process without the API (the worker), so the
 * writer's batch metrics can be scraped, or METRICS_PORT (then /metrics is not on the API port). A
 * taken port is logged and skipped: metrics never stop the writer.
 */
export async function startMetricsServer(
  rt: Runtime,
  port = rt.config.METRICS_PORT ?? rt.config.PORT,
): Promise<Server | undefined> {
  const { config, logger, metrics } = rt;
  const server = createServer(serverOptions(config), (req, res) => {
    const path = (req.url ?? '/').split('?')[0];
    if (req.method === 'GET' && path === '/metrics') {
      metrics.registry.metrics().then(
        (text) => res.writeHead(200, { 'content-type': metrics.registry.contentType }).end(text),
        (err: unknown) => {
          logger.warn({ err }, 'metrics collection failed');
          res.writeHead(500).end();
        },
      );
    } else if (req.method === 'GET' && path === '/healthz') {
      res.writeHead(200, { 'content-type': 'application/json' }).end('{"status":"ok"}');
    } else {
      res.writeHead(404).end();
    }
  });
  try {
    server.listen(port, config.HOST);
    await once(server, 'listening');
  } catch (err) {
    logger.warn({ err, port }, 'metrics server not started (set PORT or METRICS_PORT to a free port)');
    return undefined;
  }
  const address = server.address();
  logger.info({ port: typeof address === 'object' && address ? address.port : port }, 'metrics listening');
  rt.closers.push(() => closeServer(server, rt.config.SHUTDOWN_TIMEOUT_MS));
  return server;
}

/** Closes what the runtime started, last started first, then its connections. */
export async function shutdown(rt: Runtime): Promise<void> {
  for (const close of [...rt.closers].reverse()) {
    await close().catch((err: unknown) => rt.logger.warn({ err }, 'close failed'));
  }
  await rt.db.destroy().catch(() => {});
  rt.redis.disconnect();
}

/** Runs an entry point: one clear line and exit 1 on a startup problem; graceful stop on signals. */
export async function run(role: string, start: (rt: Runtime) => Promise<void>): Promise<void> {
  let rt: Runtime;
  try {
    rt = await boot(role);
    await start(rt);
    if (role === 'worker') await startMetricsServer(rt);
  } catch (err) {
    const line = err instanceof StartupError ? err.message : `failed to start: ${(err as Error).message}`;
    process.stderr.write(`flashsale ${role}: ${line}\n`);
    process.exit(1);
  }
  let stopping = false;
  const stop = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    rt.logger.info({ signal }, 'shutting down');
    const force = setTimeout(() => process.exit(1), rt.config.SHUTDOWN_TIMEOUT_MS);
    force.unref();
    // Last started, first closed: the server stops taking requests before the writer drains.
    for (const close of [...rt.closers].reverse())
      await close().catch((err) => rt.logger.warn({ err }, 'close failed'));
    await rt.db.destroy().catch(() => {});
    rt.redis.disconnect();
    process.exit(0);
  };
  process.on('SIGTERM', () => void stop('SIGTERM'));
  process.on('SIGINT', () => void stop('SIGINT'));
}
