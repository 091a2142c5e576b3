// The HTTP surface of DESIGN.md §4: public order and product endpoints, admin endpoints behind the
// bearer token, and ops endpoints. Handlers only translate: validation in, typed errors out.
import { performance } from 'node:perf_hooks';
import express, { type ErrorRequestHandler, type Request, type Response } from 'express';
import type { Kysely } from 'kysely';
import { writeAudit } from '../db/audit-repo.ts';
import { checkDatabase, type Database } from '../db/database.ts';
import { upsertSaleLimit } from '../db/limits-repo.ts';
import { isCodedError, isConnectionError, UnavailableError } from '../errors.ts';
import type { SaleAdmin } from '../inventory/admin.ts';
import type { Catalog } from '../inventory/catalog.ts';
import { UnknownProductError } from '../inventory/errors.ts';
import { availableStock, type SaleWindow } from '../inventory/sale.ts';
import { reconcile, saleStatus } from '../inventory/status.ts';
import type { Logger } from '../log.ts';
import { type Metrics, type OrderOutcome, orderOutcome } from '../metrics.ts';
import type { FailedJobsOf } from '../orders/failed-jobs.ts';
import { orderStatus } from '../orders/order-status.ts';
import type { OrderPayments } from '../orders/payments.ts';
import type { PlacedOrder, PlaceOrder } from '../orders/place-order.ts';
import type { RedisClient } from '../redis/connection.ts';
import type { WaitingRoom } from '../waiting-room/room.ts';
import { adminAuth } from './admin-auth.ts';
import { type BenchDeps, benchRouter } from './bench-routes.ts';
import { dashboardPage, liveRoutes } from './dashboard-routes.ts';
import { type Answer, type ErrorAnswer, errorAnswer, HttpError } from './errors.ts';
import type { OrderGate } from './order-gate.ts';
import { requestLog } from './request-log.ts';
import {
  fateBody,
  idempotencyKeyHeader,
  orderBody,
  parse,
  productId as productIdSchema,
  reshardBody,
  restockBody,
  saleBody,
} from './validation.ts';

export interface AppDeps {
  redis: RedisClient;
  db: Kysely<Database>;
  catalog: Catalog;
  orders: PlaceOrder;
  /** Pay and cancel (pay-or-expire). */
  payments: OrderPayments;
  admin: SaleAdmin;
  metrics: Metrics;
  logger: Logger;
  adminToken: string;
  maxOrderQuantity: number;
  /** Rate limits and admission control of POST /api/orders, before any Redis round trip. */
  gate: OrderGate;
  /** The waiting room (WAITING_ROOM=on): its line is shown on GET /api/products/:productId. */
  room?: WaitingRoom | undefined;
  /** The order queue's failed jobs of a product, shown on GET /admin/products/:productId. */
  failedJobsOf: FailedJobsOf;
  /** Benchmark-only /bench endpoints (BENCH_ENDPOINTS=1); absent: not mounted. */
  bench?: BenchDeps;
  /** The shard locks' service when it is not Redis (LOCK_BACKEND etcd or zookeeper), checked by /readyz. */
  lockService?: { backend: string; ping(): Promise<void> } | undefined;
}

export function createApp(deps: AppDeps): express.Express {
  const { redis, db, catalog, orders, payments, admin, metrics, logger, failedJobsOf } = deps;
  const app = express();
  app.disable('x-powered-by');
  app.set('etag', false);
  app.use(requestLog(logger));
  app.use(express.json({ limit: '16kb', strict: true }));

  // --- ops ---
  app.get('/healthz', (_req, res) => {
    res.json({ status: 'ok' });
  });
  app.get('/readyz', async (_req, res) => {
    const { lockService } = deps;
    const [r, p, l] = await Promise.allSettled([redis.ping(), checkDatabase(db), lockService?.ping()]);
    const body: Record<string, boolean> = {
      redis: r.status === 'fulfilled',
      postgres: p.status === 'fulfilled',
    };
    if (lockService) body[lockService.backend] = l.status === 'fulfilled';
    res.status(Object.values(body).every(Boolean) ? 200 : 503).json(body);
  });
  app.get('/metrics', async (_req, res) => {
    res.type(metrics.registry.contentType).send(await metrics.registry.metrics());
  });

  // --- public ---
  const orderSchema = orderBody(deps.maxOrderQuantity);
  app.post('/api/orders', async (req, res) => {
    const t0 = performance.now();
    let release: (() => void) | undefined;
    let answer: Answer;
    let outcome: OrderOutcome;
    try {
      const body = parse(orderSchema, req.body);
      const key = req.get('idempotency-key');
      const idempotencyKey =
        key === undefined ? undefined : parse(idempotencyKeyHeader, key, 'Idempotency-Key');
      const entry = await deps.gate.enter(body, req.ip, req.get('queue-ticket'));
      release = entry.release;
      // A ticket that placed an order answers that order again, as an Idempotency-Key would.
      const ticketKey = entry.ticketId === undefined ? undefined : `ticket:${entry.ticketId}`;
      const placed = await orders.place(body, { idempotencyKey: idempotencyKey ?? ticketKey });
      answer = accepted(placed);
      outcome = placed.replayed ? 'replayed' : 'accepted';
    } catch (err) {
      answer = failure(err, req);
      outcome = orderOutcome(answer.status, answer.body.error);
    } finally {
      release?.();
    }
    metrics.orders.inc({ outcome });
    metrics.orderSeconds.observe({ outcome }, (performance.now() - t0) / 1000);
    send(res, answer);
  });

  app.get('/api/orders/:orderId', async (req, res) => {
    res.json(await orderStatus(redis, db, req.params.orderId));
  });
  app.post('/api/orders/:orderId/pay', async (req, res) => {
    const { userId } = parse(fateBody, req.body);
    res.json(await payments.pay(req.params.orderId, userId));
  });
  app.post('/api/orders/:orderId/cancel', async (req, res) => {
    const { userId } = parse(fateBody, req.body);
    res.json(await payments.cancel(req.params.orderId, userId));
  });

  app.get('/api/products/:productId', async (req, res) => {
    const productId = parse(productIdSchema, req.params.productId, 'productId');
    const sale = await catalog.get(productId);
    if (!sale) throw new UnknownProductError(productId);
    const available = await availableStock(redis, sale);
    const queue = await deps.room?.view(productId);
    res.json({
      productId,
      available,
      soldOut: available === 0,
      ...(queue && { queue }),
      ...windowView(sale.window),
      ...(sale.paymentTimeoutSec > 0 && { paymentTimeoutSec: sale.paymentTimeoutSec }),
    });
  });

  // --- admin ---
  const adminRouter = express.Router();
  adminRouter.use(adminAuth(deps.adminToken));
  const productParam = (req: Request) => parse(productIdSchema, req.params.productId, 'productId');
  const audited = async <T>(req: Request, action: string, productId: string, change: () => Promise<T>) => {
    const before = await saleStatus(redis, db, productId).catch(() => null);
    const endTimer = metrics.adminChangeSeconds.startTimer({ kind: action });
    const result = await change().finally(endTimer);
    metrics.adminChanges.inc({ kind: action });
    if (action === 'reshard') metrics.reshards.inc();
    await writeAudit(db, {
      actor: req.get('x-admin-actor') ?? req.ip ?? 'unknown',
      action,
      productId,
      before: before ? summary(before) : null,
      after: summary(await saleStatus(redis, db, productId)),
      request: req.body,
    }).catch((err: unknown) => req.log.error({ err, action, productId }, 'audit write failed'));
    return result;
  };

  adminRouter.put('/products/:productId', async (req, res) => {
    const productId = productParam(req);
    const spec = parse(saleBody, req.body);
    const r = await audited(req, 'put', productId, () =>
      admin.put(productId, {
        stock: spec.stock,
        shards: spec.shards,
        perUserLimit: spec.perUserLimit ?? 0,
        window: { startsAt: spec.startsAt ?? null, endsAt: spec.endsAt ?? null },
        paymentTimeoutSec: spec.paymentTimeoutSec ?? 0,
      }),
    );
    // Postgres' backstop for the per-user limit (migrations/0002) follows the sale's limit.
    await upsertSaleLimit(db, productId, r.sale.perUserLimit);
    // A (re)created sale has the lottery window its PUT names, or none.
    const lottery = await deps.room?.configureLottery(
      productId,
      spec.queue?.lotterySeconds ?? 0,
      spec.startsAt ?? null,
    );
    res.status(r.created ? 201 : 200).json({
      productId,
      total: r.sale.total,
      available: r.available,
      shards: r.sale.shardKeys.length,
      generation: r.sale.generation,
      perUserLimit: r.sale.perUserLimit || null,
      ...windowView(r.sale.window),
      ...(r.sale.paymentTimeoutSec > 0 && { paymentTimeoutSec: r.sale.paymentTimeoutSec }),
      ...(lottery && { queue: { lottery } }),
    });
  });
  adminRouter.post('/products/:productId/restock', async (req, res) => {
    const productId = productParam(req);
    const { delta } = parse(restockBody, req.body);
    const r = await audited(req, 'restock', productId, () => admin.restock(productId, delta));
    res.json({
      productId,
      delta,
      total: r.sale.total,
      available: r.available,
      generation: r.sale.generation,
    });
  });
  adminRouter.post('/products/:productId/reshard', async (req, res) => {
    const productId = productParam(req);
    const { shards } = parse(reshardBody, req.body);
    const r = await audited(req, 'reshard', productId, () => admin.reshard(productId, shards));
    res.json({
      productId,
      shards: r.sale.shardKeys.length,
      generation: r.sale.generation,
      available: r.available,
    });
  });
  adminRouter.get('/products/:productId', async (req, res) => {
    const productId = productParam(req);
    const [status, failedJobs] = await Promise.all([
      saleStatus(redis, db, productId),
      failedJobsOf(productId),
    ]);
    res.json({ ...status, failedJobs });
  });
  adminRouter.get('/products/:productId/reconcile', async (req, res) => {
    const status = await saleStatus(redis, db, productParam(req));
    // The units of both sums checked (returning and paid are not in the audit's summary).
    res.json({ ...reconcile(status), ...summary(status), returning: status.returning, paid: status.paid });
  });
  adminRouter.use(liveRoutes({ redis, db, metrics, failedJobsOf }));
  app.use('/admin', adminRouter);
  app.use(dashboardPage());
  if (deps.bench) app.use('/bench', benchRouter(deps.bench));

  app.use((req, _res, next) => next(new HttpError('not_found', `no route ${req.method} ${req.path}`)));

  const onError: ErrorRequestHandler = (err, req, res, _next) => {
    const answer = failure(err, req);
    // An order refused before its handler ran (body not JSON, too large) is still an order answer.
    if (req.method === 'POST' && req.path === '/api/orders') {
      metrics.orders.inc({ outcome: orderOutcome(answer.status, answer.body.error) });
    }
    send(res, answer);
  };
  app.use(onError);

  function failure(err: unknown, req: Request): ErrorAnswer {
    const answer = known(err);
    if (answer) return answer;
    req.log.error({ err, method: req.method, path: req.originalUrl }, 'unexpected error');
    return errorAnswer(err);
  }

  return app;
}

/** The answer for an expected failure (typed error, bad JSON, unreachable store); undefined otherwise. */
function known(err: unknown): ErrorAnswer | undefined {
  if (isCodedError(err)) return errorAnswer(err);
  const type = (err as { type?: string } | null)?.type;
  if (type === 'entity.parse.failed')
    return errorAnswer(new HttpError('invalid_request', 'body is not valid JSON'));
  if (type === 'entity.too.large')
    return errorAnswer(new HttpError('payload_too_large', 'body larger than 16 kB'));
  if (type === 'encoding.unsupported' || type === 'charset.unsupported') {
    return errorAnswer(new HttpError('unsupported_media_type', 'body must be UTF-8 JSON'));
  }
  if (isConnectionError(err)) return errorAnswer(new UnavailableError('Redis or Postgres', err));
  return undefined;
}

/** The 202 of a placed order (also what a replayed or resolved Idempotency-Key answers). */
function accepted(o: PlacedOrder): Answer {
  const { orderId, productId, userId, quantity } = o;
  return { status: 202, body: { orderId, status: 'reserved', productId, userId, quantity } };
}

function send(res: Response, answer: Answer): void {
  res
    .status(answer.status)
    .set(answer.headers ?? {})
    .json(answer.body);
}

/** The sale window as the API shows it: ISO 8601 times, each only when set. */
function windowView(w: SaleWindow): { startsAt?: string; endsAt?: string } {
  return {
    ...(w.startsAt === null ? {} : { startsAt: new Date(w.startsAt).toISOString() }),
    ...(w.endsAt === null ? {} : { endsAt: new Date(w.endsAt).toISOString() }),
  };
}

function summary(s: Awaited<ReturnType<typeof saleStatus>>) {
  const { available, sold, reserved, confirmed, total, generation } = s;
  return { available, sold, reserved, confirmed, total, generation, shards: s.shards.length };
}
