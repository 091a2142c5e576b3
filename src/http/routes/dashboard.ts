// The live ops dashboard: GET /dashboard serves a static page (src/http/dashboard/, charts by uPlot
// from node_modules; nothing from the internet, no build step) that asks for the admin token and
// polls GET /admin/products/:id/live, the admin-protected JSON it is drawn from (src/ops/live.ts).
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import express, { type Router } from 'express';
import { z } from 'zod';
import { type LiveDeps, LiveView } from '../../ops/live.ts';
import { parse, productId } from '../validation.ts';
import { exactRouter, onlyMethods } from './allow.ts';

const PAGE_DIR = fileURLToPath(new URL('../dashboard/', import.meta.url));
const resolveModule = createRequire(import.meta.url).resolve;
/** The chart library, served as the page's only third-party file. */
const UPLOT = {
  'uPlot.iife.min.js': resolveModule('uplot/dist/uPlot.iife.min.js'),
  'uPlot.min.css': resolveModule('uplot/dist/uPlot.min.css'),
};

/** Only this origin's own files and API: the page holds the admin token. */
const CSP = "default-src 'self'; img-src 'self' data:; frame-ancestors 'none'";

/** `?since=<epoch ms>` of the live view (also the OpenAPI document's). */
export const sinceQuery = z
  .string()
  .regex(/^\d{1,15}$/, 'must be epoch milliseconds')
  .transform(Number)
  .optional();

const onlyGet = onlyMethods('GET');
const readOnly: express.RequestHandler = (req, res, next) =>
  req.method === 'GET' || req.method === 'HEAD' ? next() : onlyGet(req, res, next);

/** GET /dashboard and its files (public: the page holds no data until given the admin token). */
export function dashboardPage(): Router {
  const router = exactRouter();
  const noSniff = (res: express.Response) => {
    res.set('X-Content-Type-Options', 'nosniff');
    res.set('Content-Security-Policy', CSP);
    res.set('Cache-Control', 'no-cache');
  };
  router
    .route('/dashboard')
    .get((_req, res) => {
      noSniff(res);
      res.sendFile('index.html', { root: PAGE_DIR });
    })
    .all(onlyMethods('GET'));
  for (const [name, file] of Object.entries(UPLOT)) {
    router
      .route(`/dashboard/${name}`)
      .get((_req, res) => {
        noSniff(res);
        res.sendFile(file);
      })
      .all(onlyMethods('GET'));
  }
  // The page's own files answer like the routes above: GET and HEAD, 405 for any other method.
  router.use('/dashboard', readOnly, express.static(PAGE_DIR, { index: false, setHeaders: noSniff }));
  return router;
}

/** GET /products/:productId/live?since=<epoch ms>, mounted on the admin router (token checked there). */
export function liveRoutes(deps: LiveDeps): Router {
  const live = new LiveView(deps);
  const router = exactRouter();
  router
    .route('/products/:productId/live')
    .get(async (req, res) => {
      const id = parse(productId, req.params.productId, 'productId');
      const since = parse(sinceQuery, req.query.since, 'since');
      res.set('Cache-Control', 'no-store');
      res.json(await live.product(id, since));
    })
    .all(onlyMethods('GET'));
  return router;
}
