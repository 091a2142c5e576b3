// The dashboard in a real headless Chromium: a wrong admin token shows an error and no data; the
// right one shows the sale, and under a burst of orders the page's numbers converge on what
// GET /admin/products/:id says. Saves a screenshot taken under load (DASHBOARD_SCREENSHOT, default
// .bench/dashboard.png; docs/dashboard.png is one of these).
import assert from 'node:assert/strict';
import { mkdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { Page } from 'puppeteer-core';
import { until } from '../harness/async.ts';
import { type HeadlessBrowser, launchBrowser } from '../harness/browser.ts';
import { ADMIN_TOKEN, admin, call, createSale, drained } from '../harness/service.ts';
import { useService } from './support/suite.ts';

const SCREENSHOT = process.env.DASHBOARD_SCREENSHOT || join('.bench', 'dashboard.png');
const PRODUCT = 'dash-p';
const STOCK = 600;
const ORDERS = 760;
const CLIENTS = 4;

interface Shown {
  viewShown: boolean;
  available: number | null;
  sold: number | null;
  total: number | null;
  reserved: number | null;
  confirmed: number | null;
  failedJobs: number | null;
  soldOut: string;
  shards: { index: number; stock: number }[];
  accepted: number;
  soldOutAnswers: number;
  acceptedRate: number | null;
  /** Points in the page's charts. */
  points: number;
}

// Sent as source text: tsx would wrap a named function in helpers the page does not have.
const READ_PAGE = `(() => {
  const num = (id) => {
    const text = document.getElementById(id)?.textContent ?? '';
    return text === '' || text === '\u2013' ? null : Number(text.replace(/,/g, ''));
  };
  const totals = document.getElementById('window-totals').dataset;
  return {
    viewShown: !document.getElementById('view').hidden,
    available: num('available'),
    sold: num('sold'),
    total: num('total'),
    reserved: num('reserved'),
    confirmed: num('confirmed'),
    failedJobs: num('failed-jobs'),
    soldOut: document.getElementById('sold-out').textContent,
    shards: [...document.querySelectorAll('#shards tbody tr')].map((r) => ({
      index: Number(r.dataset.shard),
      stock: Number(r.dataset.stock),
    })),
    accepted: Number(totals.accepted ?? NaN),
    soldOutAnswers: Number(totals.sold_out ?? NaN),
    acceptedRate: num('rate-accepted'),
    points: Number(totals.points ?? 0),
  };
})()`;

/** What the page shows, read from its elements. */
function pageNumbers(page: Page): Promise<Shown> {
  return page.evaluate(READ_PAGE) as Promise<Shown>;
}

/** What the page shows once `ready` holds (read every 200 ms); fails naming `what` after timeoutMs. */
function shownOnce(
  what: string,
  ready: (s: Shown) => boolean,
  page: Page,
  timeoutMs: number,
): Promise<Shown> {
  return until(
    what,
    async () => {
      const shown = await pageNumbers(page);
      return ready(shown) && shown;
    },
    { timeoutMs, everyMs: 200, describe: async () => JSON.stringify(await pageNumbers(page)) },
  );
}

async function signIn(page: Page, token: string): Promise<void> {
  await page.waitForSelector('#login:not([hidden]) #token');
  await page.type('#token', token);
  await page.click('#login-form button[type=submit]');
}

describe('GET /dashboard in headless Chromium', () => {
  const { svc } = useService();
  let chrome: HeadlessBrowser | undefined;
  let page: Page;
  /** Script errors of the page: none may happen. */
  const pageErrors: string[] = [];

  before(async () => {
    chrome = await launchBrowser();
    page = await chrome.browser.newPage();
    page.on('pageerror', (err) => pageErrors.push(String(err)));
  });
  after(async () => {
    await chrome?.close();
  });

  it('a wrong token shows an error and no data', async () => {
    await createSale(svc.url, PRODUCT, { stock: STOCK, shards: 8 });
    await page.goto(`${svc.url}/dashboard?product=${PRODUCT}`);
    await signIn(page, 'not-the-token');
    await page.waitForSelector('#error:not([hidden])');
    const error = await page.$eval('#error', (el) => el.textContent ?? '');
    assert.match(error, /401 unauthorized/);
    const shown = await pageNumbers(page);
    assert.equal(shown.viewShown, false);
    assert.equal(shown.available, null, 'no stock figure was filled in');
    assert.equal(await page.evaluate(() => sessionStorage.getItem('flashsale.adminToken')), null);
  });

  it('the right token shows the sale; under orders the numbers converge on GET /admin/products/:id', async () => {
    await signIn(page, ADMIN_TOKEN);
    const first = await shownOnce('the page shows the stock', (s) => s.available === STOCK, page, 20_000);
    assert.equal(first.viewShown, true);
    assert.equal(first.total, STOCK);
    assert.equal(first.shards.length, 8);

    // A burst of distinct buyers, more than the stock: 202s, then 409 sold_out.
    const statuses: number[] = [];
    let next = 0;
    const load = Promise.all(
      Array.from({ length: CLIENTS }, async () => {
        while (next < ORDERS) {
          const n = next++;
          const r = await call(svc.url, 'POST', '/api/orders', { productId: PRODUCT, userId: `b${n}` });
          statuses.push(r.status);
        }
      }),
    );
    // Screenshot once the charts hold a few seconds of live orders (or once the load is over).
    let loadDone = false;
    void load.finally(() => {
      loadDone = true;
    });
    await shownOnce(
      'a few seconds of live orders on the charts',
      (s) => loadDone || ((s.acceptedRate ?? 0) > 0 && s.points >= 5),
      page,
      60_000,
    );
    mkdirSync(dirname(SCREENSHOT), { recursive: true });
    await page.screenshot({ path: SCREENSHOT, fullPage: true });
    await load;

    const accepted = statuses.filter((s) => s === 202).length;
    const soldOut = statuses.filter((s) => s === 409).length;
    assert.equal(
      accepted,
      STOCK,
      `statuses: ${JSON.stringify(statuses.filter((s) => s !== 202 && s !== 409))}`,
    );
    assert.equal(accepted + soldOut, ORDERS);
    const status = await drained(svc.url, PRODUCT);

    const shown = await shownOnce(
      'the page converged on the final figures',
      (s) => s.confirmed === status.confirmed && s.accepted === accepted && s.soldOutAnswers === soldOut,
      page,
      30_000,
    );
    const fresh = await call(svc.url, 'GET', `/admin/products/${PRODUCT}`, undefined, admin);
    const expected = fresh.body as {
      available: number;
      sold: number;
      total: number;
      reserved: number;
      confirmed: number;
      shards: { index: number; stock: number }[];
      failedJobs: { count: number };
    };
    assert.deepEqual(
      {
        available: shown.available,
        sold: shown.sold,
        total: shown.total,
        reserved: shown.reserved,
        confirmed: shown.confirmed,
        failedJobs: shown.failedJobs,
        shards: shown.shards,
      },
      {
        available: expected.available,
        sold: expected.sold,
        total: expected.total,
        reserved: expected.reserved,
        confirmed: expected.confirmed,
        failedJobs: expected.failedJobs.count,
        shards: expected.shards.map((s) => ({ index: s.index, stock: s.stock })),
      },
    );
    assert.equal(expected.available, 0);
    assert.equal(expected.sold, STOCK);
    assert.equal(shown.soldOut, 'SOLD OUT');
    // The outcome counts the page charted are the client's own: every 202 and every 409.
    assert.equal(shown.accepted, accepted);
    assert.equal(shown.soldOutAnswers, soldOut);
    assert.deepEqual(pageErrors, []);
  });
});
