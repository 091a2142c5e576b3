// The API reference page (GET /docs/api) in a real headless Chromium, under its Content-Security-Policy:
// Redoc renders every operation of the document it fetches from /openapi.json, with no script from
// anywhere but the service and no inline script. Saves a screenshot (API_REFERENCE_SCREENSHOT,
// default .bench/api-reference.png; docs/api-reference.png is one of these).
import assert from 'node:assert/strict';
import { mkdirSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { dirname, join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import express from 'express';
import { until } from '../harness/async.ts';
import { type HeadlessBrowser, launchBrowser } from '../harness/browser.ts';
import { openApiDocument } from '../src/http/openapi/document.ts';
import { openApiRoutes } from '../src/http/routes/openapi.ts';

const SCREENSHOT = process.env.API_REFERENCE_SCREENSHOT || join('.bench', 'api-reference.png');

/** Redoc's own logo, refused by the page's policy (img-src 'self' data:). */
const REDOC_LOGO = /^https:\/\/cdn\.redoc\.ly\/redoc\/logo-mini\.svg$/;

describe('the API reference page', () => {
  let browser: HeadlessBrowser | undefined;
  let server: ReturnType<express.Express['listen']> | undefined;
  before(async () => {
    // The page and the document need nothing of the service but these routes.
    const app = express().use(openApiRoutes());
    server = app.listen(0, '127.0.0.1');
    await new Promise((resolve) => server?.once('listening', resolve));
    browser = await launchBrowser();
  });
  after(async () => {
    await browser?.close();
    server?.close();
  });

  it('renders every operation of the document; scripts only from the service, none inline', async () => {
    const url = `http://127.0.0.1:${((server as NonNullable<typeof server>).address() as AddressInfo).port}`;
    const page = await (browser as HeadlessBrowser).browser.newPage();
    const violations: string[] = [];
    const requested: string[] = [];
    page.on('console', (m) => {
      if (/Content Security Policy/.test(m.text())) violations.push(m.text());
    });
    page.on('request', (r) => requested.push(r.url()));
    await page.goto(`${url}/docs/api`);
    const summaries = Object.values(openApiDocument().paths ?? {}).flatMap((ops) =>
      Object.values(ops as Record<string, { summary?: string }>).map((op) => op.summary as string),
    );
    const shown = await until(
      'Redoc to render the operations',
      async () => {
        const text = await page.evaluate('document.body.innerText');
        return summaries.every((s) => String(text).includes(s)) ? String(text) : undefined;
      },
      { timeoutMs: 120_000, everyMs: 100 },
    );
    assert.match(shown, /flashsale \(0\.1\.0\)/);
    // Redoc's styles are in nonce'd <style> elements; what the policy refuses is its few inline style
    // attributes and its logo from the internet, never a script or a connection.
    assert.deepEqual(
      violations.filter((v) => !/Applying inline style|Loading the image 'https:\/\/cdn\.redoc\.ly/.test(v)),
      [],
    );
    // Redoc's footer logo is asked for from its CDN once it renders (whether before or after the
    // check above is a matter of timing); the policy refuses it (the violation filtered above).
    assert.deepEqual(
      requested.filter((r) => !r.startsWith(url) && !r.startsWith('data:') && !REDOC_LOGO.test(r)),
      [],
      'nothing else from another origin',
    );
    mkdirSync(dirname(SCREENSHOT), { recursive: true });
    await page.screenshot({ path: SCREENSHOT });
  });
});
