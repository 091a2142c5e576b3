// GET /openapi.json (the OpenAPI document, src/http/openapi/) and GET /docs/api, the API reference
// page rendered from it in the browser by Redoc (its standalone bundle, served from node_modules).
import { randomBytes } from 'node:crypto';
import { createRequire } from 'node:module';
import type { Response, Router } from 'express';
import { openApiDocument } from '../openapi/document.ts';
import { exactRouter, onlyMethods } from './allow.ts';

const REDOC = createRequire(import.meta.url).resolve('redoc/bundles/redoc.standalone.js');

/**
 * The dashboard's policy, but for Redoc's styles: its styled-components add <style> elements, which
 * carry this answer's nonce (given to Redoc.init); scripts are this origin's files only.
 */
const csp = (nonce: string) =>
  `default-src 'self'; style-src 'self' 'nonce-${nonce}'; img-src 'self' data:; frame-ancestors 'none'`;

/** Starts Redoc on the document; the nonce comes from the page (data-nonce). Search is off: it needs a blob: worker. */
const START = `const root = document.getElementById('redoc');
Redoc.init('/openapi.json', { nonce: root.dataset.nonce, disableSearch: true, hideDownloadButton: false }, root);
`;

const page = (nonce: string) => `<!doctype html>
<html lang="en">
<head>
  <meta charset="utf-8">
  <meta name="viewport" content="width=device-width, initial-scale=1">
  <title>flashsale · API reference</title>
</head>
<body>
  <noscript>The reference needs JavaScript; the document itself is <a href="/openapi.json">/openapi.json</a>.</noscript>
  <div id="redoc" data-nonce="${nonce}"></div>
  <script src="/docs/api/redoc.standalone.js"></script>
  <script src="/docs/api/start.js"></script>
</body>
</html>
`;

function headers(res: Response, policy: string): void {
  res.set('X-Content-Type-Options', 'nosniff');
  res.set('Content-Security-Policy', policy);
  res.set('Cache-Control', 'no-cache');
}

/** The document and its reference page (public: the document describes the API, it holds no data). */
export function openApiRoutes(): Router {
  const router = exactRouter();
  router
    .route('/openapi.json')
    .get((_req, res) => {
      res.set('Cache-Control', 'no-cache');
      res.json(openApiDocument());
    })
    .all(onlyMethods('GET'));
  router
    .route('/docs/api')
    .get((_req, res) => {
      const nonce = randomBytes(16).toString('base64');
      headers(res, csp(nonce));
      res.type('html').send(page(nonce));
    })
    .all(onlyMethods('GET'));
  // The page's two scripts answer like the routes above: GET and HEAD, 405 for any other method.
  router
    .route('/docs/api/start.js')
    .get((_req, res) => {
      headers(res, csp('none'));
      res.type('js').send(START);
    })
    .all(onlyMethods('GET'));
  router
    .route('/docs/api/redoc.standalone.js')
    .get((_req, res) => {
      headers(res, csp('none'));
      res.sendFile(REDOC);
    })
    .all(onlyMethods('GET'));
  return router;
}
