// The public order endpoints: POST /api/orders (through the order gate), GET /api/orders/:orderId,
// and pay / cancel. Every answer to POST /api/orders is counted by outcome, refusals included.
import { performance } from 'node:perf_hooks';
import express, { type ErrorRequestHandler, type Request, type Router } from 'express';
import { type OrderOutcome, orderOutcome } from '../../metrics.ts';
import { orderStatus } from '../../orders/order-status.ts';
import type { PlacedOrder } from '../../orders/place-order.ts';
import { answerOf, failure, send } from '../answers.ts';
import type { AppDeps } from '../app-deps.ts';
import { jsonBody } from '../body.ts';
import type { Answer } from '../errors.ts';
import { visibleOrder } from '../order-views.ts';
import { fateBody, idempotencyKeyHeader, orderBody, parse } from '../validation.ts';
import { onlyMethods } from './allow.ts';

type OrdersDeps = Pick<
  AppDeps,
  'redis' | 'db' | 'orders' | 'payments' | 'metrics' | 'gate' | 'maxOrderQuantity' | 'doors'
>;

/** The 202 of a placed order (also what a replayed or resolved Idempotency-Key answers). */
export function accepted(o: Pick<PlacedOrder, 'orderId' | 'productId' | 'userId' | 'quantity'>): Answer {
  const { orderId, productId, userId, quantity } = o;
  return { status: 202, body: { orderId, status: 'reserved', productId, userId, quantity } };
}

export function ordersRouter(deps: OrdersDeps): Router {
  const { redis, db, payments } = deps;
  const { identity, payer } = deps.doors;
  const router = express.Router();
  router
    .route('/api/orders')
    .post(stampArrival, jsonBody(), identity.asBuyer, placeOrder(deps))
    .all(onlyMethods('POST'));
  router
    .route('/api/orders/:orderId')
    .get(async (req, res) => {
      const viewer = await identity.viewer(req);
      res.json(visibleOrder(viewer, await orderStatus(redis, db, req.params.orderId)));
    })
    .all(onlyMethods('GET'));
  router
    .route('/api/orders/:orderId/pay')
    .post(jsonBody(), payer, async (req, res) => {
      const { userId } = parse(fateBody, req.body);
      res.json(await payments.pay(req.params.orderId as string, userId));
    })
    .all(onlyMethods('POST'));
  router
    .route('/api/orders/:orderId/cancel')
    .post(jsonBody(), identity.asBuyer, async (req, res) => {
      const { userId } = parse(fateBody, req.body);
      res.json(await payments.cancel(req.params.orderId as string, userId));
    })
    .all(onlyMethods('POST'));
  router.use(countRefusedOrder(deps));
  return router;
}

/**
 * Notes when the request was read, before its body and token are: a first request's place in the
 * waiting line is that moment, not when the (asynchronous) body parsing and token check let it on.
 */
const stampArrival: express.RequestHandler = (_req, res, next) => {
  res.locals.receivedAt = performance.now();
  next();
};

function placeOrder(deps: OrdersDeps): express.RequestHandler {
  const { orders, metrics, gate } = deps;
  const schema = orderBody(deps.maxOrderQuantity);
  return async (req: Request, res) => {
    const t0 = performance.now();
    let release: (() => void) | undefined;
    let answer: Answer;
    let outcome: OrderOutcome;
    try {
      const body = parse(schema, req.body);
      const key = req.get('idempotency-key');
      const idempotencyKey =
        key === undefined ? undefined : parse(idempotencyKeyHeader, key, 'Idempotency-Key');
      const waitedMs = performance.now() - (res.locals.receivedAt as number);
      const entry = await gate.enter(body, req.ip, req.get('queue-ticket'), waitedMs);
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
  };
}

/** An order refused before its handler ran (body not JSON, too large, not decodable) is still an order answer. */
function countRefusedOrder(deps: OrdersDeps): ErrorRequestHandler {
  return (err, req, _res, next) => {
    if (req.method === 'POST' && req.path === '/api/orders') {
      const answer = answerOf(err);
      deps.metrics.orders.inc({ outcome: orderOutcome(answer.status, answer.body.error) });
    }
    next(err);
  };
}
