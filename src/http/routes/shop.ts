// The buyers' waiting page: GET /shop/:productId serves a static page (src/http/shop/) that orders
// through @flashsale/client's browser build, served beside it; it asks for the buyer's identity as BUYER_AUTH says.
import { existsSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import express, { type Router } from 'express';
import { UnavailableError } from '../../errors.ts';
import type { ApiDoors } from '../doors.ts';
import { parse, productId } from '../validation.ts';
import { onlyMethods } from './allow.ts';

const PAGE_DIR = fileURLToPath(new URL('../shop/', import.meta.url));
/** The client's browser build: one ES module with its dependency bundled in (npm run build -w @flashsale/client). */
const CLIENT_DIST = join(
  dirname(createRequire(import.meta.url).resolve('@flashsale/client/package.json')),
  'dist',
);

/** As strict as the dashboard's: this origin's own files and API only, no inline script or style. */
const CSP =
  "default-src 'self'; img-src 'self' data:; frame-ancestors 'none'; base-uri 'none'; form-action 'none'";

function secure(res: express.Response): void {
  res.set('X-Content-Type-Options', 'nosniff');
  res.set('Content-Security-Policy', CSP);
  res.set('Cache-Control', 'no-cache');
}

/** GET /shop/:productId and its files (public: the buyer's own identity stays in the page). */
export function shopPage(doors: Pick<ApiDoors, 'identity' | 'buyerPays'>): Router {
  // How the page asks who the buyer is, and whether it offers payment, fixed at start.
  const page = readFileSync(join(PAGE_DIR, 'index.html'), 'utf8')
    .replace('{{buyerAuth}}', doors.identity.mode)
    .replace('{{buyerPays}}', String(doors.buyerPays));
  const router = express.Router();
  router.use('/shop/assets', express.static(PAGE_DIR, { index: false, setHeaders: secure }));
  router.get('/shop/assets/client.js', (_req, res) => {
    // A development run from the sources before any build: say what to run, not a bare 404.
    if (!existsSync(join(CLIENT_DIST, 'browser.js')))
      throw new UnavailableError('the client build (npm run build -w @flashsale/client)');
    secure(res);
    res.sendFile('browser.js', { root: CLIENT_DIST });
  });
  router
    .route('/shop/:productId')
    .get((req, res) => {
      parse(productId, req.params.productId, 'productId');
      secure(res);
      res.type('html').send(page);
    })
    .all(onlyMethods('GET'));
  return router;
}
