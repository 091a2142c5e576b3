// The HTTP surface of DESIGN.md §4, composed of one router per area: ops, orders, products, admin
// (behind the bearer token), the dashboard page, the OpenAPI document and its reference page; then 404
// for unknown paths, and one error answer.
import express, { type ErrorRequestHandler } from 'express';
import { failure, send } from './answers.ts';
import type { AppDeps } from './app-deps.ts';
import { HttpError } from './errors.ts';
import { requestLog } from './request-log.ts';
import { adminRouter } from './routes/admin.ts';
import { dashboardPage } from './routes/dashboard.ts';
import { openApiRoutes } from './routes/openapi.ts';
import { opsRouter } from './routes/ops.ts';
import { ordersRouter } from './routes/orders.ts';
import { productsRouter } from './routes/products.ts';

export type { ApiExtension, ApiParts, AppDeps } from './app-deps.ts';

export function createApp(deps: AppDeps): express.Express {
  const app = express();
  app.disable('x-powered-by');
  app.set('etag', false);
  app.use(requestLog(deps.logger));
  // Orders first: the herd's requests then pass through no other router's routes.
  app.use(ordersRouter(deps));
  app.use(opsRouter(deps));
  app.use(productsRouter(deps));
  app.use('/admin', adminRouter(deps));
  app.use(dashboardPage());
  app.use(openApiRoutes());
  deps.extend?.(app);
  app.use((req, _res, next) => next(new HttpError('not_found', `no route ${req.method} ${req.path}`)));
  const onError: ErrorRequestHandler = (err, req, res, _next) => {
    send(res, failure(err, req));
  };
  app.use(onError);
  return app;
}
