// The HTTP surface of DESIGN.md §4, composed of one router per area: ops, orders, products, admin
// (behind the bearer token), the dashboard, the buyers' waiting page, the OpenAPI document and its
// reference page; then 404 for unknown paths, and one error answer.
import express, { type ErrorRequestHandler } from 'express';
import { failure, send } from './answers.ts';
import type { AppDeps } from './app-deps.ts';
import { type BodyLimits, guardBody } from './body-limits.ts';
import { HttpError } from './errors.ts';
import { requestLog } from './request-log.ts';
import { checkTarget } from './request-target.ts';
import { adminRouter } from './routes/admin.ts';
import { dashboardPage } from './routes/dashboard.ts';
import { openApiRoutes } from './routes/openapi.ts';
import { opsRouter } from './routes/ops.ts';
import { ordersRouter } from './routes/orders.ts';
import { productsRouter } from './routes/products.ts';
import { shopPage } from './routes/shop.ts';

export type { ApiExtension, ApiParts, AppDeps } from './app-deps.ts';

/** Every request's body guarded (body-limits.ts) before any route may read it. */
function guardBodies(limits: BodyLimits): express.RequestHandler {
  return (req, res, next) => {
    if (guardBody(req, res, limits)) next();
  };
}

export function createApp(deps: AppDeps): express.Express {
  const app = express();
  app.disable('x-powered-by');
  app.set('etag', false);
  app.set('case sensitive routing', true);
  app.set('strict routing', true);
  app.use(requestLog(deps.logger));
  app.use(guardBodies(deps.bodyLimits));
  app.use(checkTarget());
  // Orders first: the herd's requests then pass through no other router's routes.
  app.use(ordersRouter(deps));
  app.use(opsRouter(deps));
  app.use(productsRouter(deps));
  app.use('/admin', adminRouter(deps));
  app.use(dashboardPage());
  app.use(shopPage(deps.doors));
  app.use(openApiRoutes());
  deps.extend?.(app);
  app.use((req, _res, next) => next(new HttpError('not_found', `no route ${req.method} ${req.path}`)));
  const onError: ErrorRequestHandler = (err, req, res, _next) => {
    // Answered already: a body refused mid-way (body-limits.ts), whose reader then failed too.
    if (res.headersSent) return;
    send(res, failure(err, req));
  };
  app.use(onError);
  return app;
}
