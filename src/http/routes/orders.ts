// The public order endpoints after an order is placed: GET /api/orders/:orderId, pay and cancel.
// POST /api/orders itself is the order door's (order-door.ts): express sees only its other methods.
import express, { type Router } from 'express';
import { orderStatus } from '../../orders/order-status.ts';
import type { AppDeps } from '../app-deps.ts';
import { jsonBody } from '../body.ts';
import { visibleOrder } from '../order-views.ts';
import { fateBody, parse } from '../validation.ts';
import { onlyMethods } from './allow.ts';

type OrdersDeps = Pick<AppDeps, 'redis' | 'db' | 'payments' | 'doors'>;

export function ordersRouter(deps: OrdersDeps): Router {
  const { redis, db, payments } = deps;
  const { identity, payer } = deps.doors;
  const router = express.Router();
  router.route('/api/orders').all(onlyMethods('POST'));
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
  return router;
}
