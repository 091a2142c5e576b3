// The public order endpoints: POST /api/orders (through the order gate), GET /api/orders/:orderId,
// and pay / cancel. Every answer to POST /api/orders is counted by outcome, refusals included.
import { performance } from 'node:perf_hooks';
import express, { type ErrorRequestHandler, type Request, type Router } from 'express';
import { orderOutcome } from '../../metrics.ts';
import { orderStatus } from '../../orders/order-status.ts';
import { answerOf, logUnexpected, send } from '../answers.ts';
import type { AppDeps } from '../app-deps.ts';
import { jsonBody } from '../body.ts';
import { visibleOrder } from '../order-views.ts';
import { fateBody, parse } from '../validation.ts';
import { onlyMethods } from './allow.ts';

type OrdersDeps = Pick<AppDeps, 'redis' | 'db' | 'payments' | 'metrics' | 'intake' | 'doors'>;

export function ordersRouter(deps: OrdersDeps): Router {
  const { redis, db, payments } = deps;
  const { identity, payer } = deps.doors;
  const router = express.Router();
  const place = placeOrder(deps);
  router
    .route('/api/orders')
    .post(stampArrival, jsonBody(), identity.asBuyer, place)
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
  const { metrics, intake } = deps;
  return async (req: Request, res) => {
    const receivedAt = res.locals.receivedAt as number;
    const { answer, outcome } = await intake.answer(
      () => ({
        body: req.body,
        idempotencyKey: req.get('idempotency-key'),
        ticket: req.get('queue-ticket'),
        address: () => req.ip,
        waitedMs: performance.now() - receivedAt,
      }),
      logUnexpected(req),
    );
    metrics.observeOrder(outcome, (performance.now() - receivedAt) / 1000);
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
