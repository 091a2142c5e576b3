// The dashboard in a real headless Chromium, read as a person reads it: a wrong admin token shows an
// error and no data; the right one shows the sale and its settings, no card on screen is empty, and
// under a burst of orders every figure (sold, the shard table's sums, the order fates) converges on
// GET /admin/products/:id; the service's own changes (sold-out consolidation, expired units coming
// back) are named as such. Saves a screenshot taken under load (DASHBOARD_SCREENSHOT, default
// .bench/dashboard.png) and one of those changes (-changes.png); docs/dashboard*.png are such.
import assert from 'node:assert/strict';
import { mkdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { Page } from 'puppeteer-core';
import { until } from '../harness/async.ts';
import { type HeadlessBrowser, launchBrowser } from '../harness/browser.ts';
import { ADMIN_TOKEN, admin, call, createSale, drained } from '../harness/service.ts';
import {
  type AdminStatus,
  expectedFigures,
  pageNumbers,
  type Shown,
  shownFigures,
  shownOnce,
  signIn,
} from './support/dashboard-page.ts';
import { useService } from './support/suite.ts';

const SCREENSHOT = process.env.DASHBOARD_SCREENSHOT || join('.bench', 'dashboard.png');
const PRODUCT = 'dash-p';
const STOCK = 600;
const ORDERS = 760;
const CLIENTS = 4;
const HOUR_MS = 3_600_000;
/** Opened an hour ago (its 10 s lottery long drawn), closing in a day; orders wait an hour for payment. */
const SETTINGS = {
  startsAt: new Date(Date.now() - HOUR_MS).toISOString(),
  endsAt: new Date(Date.now() + 24 * HOUR_MS).toISOString(),
  paymentTimeoutSec: 3600,
  perUserLimit: 2,
  queue: { lotterySeconds: 10 },
};

async function adminStatus(url: string, productId: string): Promise<AdminStatus> {
  const r = await call(url, 'GET', `/admin/products/${productId}`, undefined, admin);
  assert.equal(r.status, 200, JSON.stringify(r.body));
  return r.body as unknown as AdminStatus;
}

/** No card on screen is blank: a hidden card must be hidden, a shown one filled in. */
function assertNoEmptyCard(shown: Shown): void {
  assert.deepEqual(shown.emptyCards, [], `cards on screen: ${JSON.stringify(shown.visibleCards)}`);
}

/** The page, once it shows what GET /admin/products/:id says (both read again until they agree). */
async function agreesWithAdmin(url: string, productId: string, page: Page): Promise<Shown> {
  let last = '';
  const shown = await until(
    `the page to show GET /admin/products/${productId}'s figures`,
    async () => {
      const [s, a] = await Promise.all([pageNumbers(page), adminStatus(url, productId)]);
      const [seen, expected] = [shownFigures(s), expectedFigures(a)];
      last = `page ${JSON.stringify(seen)}\nadmin ${JSON.stringify(expected)}`;
      return JSON.stringify(seen) === JSON.stringify(expected) && s;
    },
    { timeoutMs: 30_000, everyMs: 200, describe: () => last },
  );
  // Once more, field by field, against a fresh read: at rest the page and the admin view agree.
  assert.deepEqual(shownFigures(shown), expectedFigures(await adminStatus(url, productId)));
  assertNoEmptyCard(shown);
  return shown;
}

/** `n` distinct buyers' orders from CLIENTS concurrent clients; resolves to their statuses. */
async function burst(url: string, productId: string, n: number, quantity = 1): Promise<number[]> {
  const statuses: number[] = [];
  let next = 0;
  await Promise.all(
    Array.from({ length: CLIENTS }, async () => {
      while (next < n) {
        const i = next++;
        const r = await call(url, 'POST', '/api/orders', { productId, userId: `b${i}`, quantity });
        statuses.push(r.status);
      }
    }),
  );
  return statuses;
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
    await createSale(svc.url, PRODUCT, { stock: STOCK, shards: 8, ...SETTINGS });
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

  it('the right token shows the sale and its settings, and no card on screen is empty', async () => {
    await signIn(page, ADMIN_TOKEN);
    const first = await shownOnce('the page shows the stock', (s) => s.available === STOCK, page, 20_000);
    assert.equal(first.viewShown, true);
    assertNoEmptyCard(first);
    assert.ok(!first.visibleCards.some((l) => /pending|waiting room/.test(l)), String(first.visibleCards));
    assert.equal(first.settings['opens at'], SETTINGS.startsAt);
    assert.equal(first.settings['closes at'], SETTINGS.endsAt);
    assert.equal(first.settings.payment, 'within 3,600 seconds');
    assert.equal(first.settings['per buyer'], 'at most 2 units');
    assert.match(first.settings.lottery ?? '', /^first 10 seconds, drawn /);
    await agreesWithAdmin(svc.url, PRODUCT, page);
  });

  it('under orders every figure converges on GET /admin/products/:id', async () => {
    const load = burst(svc.url, PRODUCT, ORDERS);
    // Screenshot once the charts hold a few seconds of live orders (or once the load is over).
    let loadDone = false;
    void load.finally(() => {
      loadDone = true;
    });
    const busy = await shownOnce(
      'a few seconds of live orders on the charts',
      (s) => loadDone || ((s.acceptedRate ?? 0) > 0 && s.points >= 10),
      page,
      60_000,
    );
    assertNoEmptyCard(busy);
    mkdirSync(dirname(SCREENSHOT), { recursive: true });
    await page.screenshot({ path: SCREENSHOT, fullPage: true });
    const statuses = await load;

    const accepted = statuses.filter((s) => s === 202).length;
    const soldOut = statuses.filter((s) => s === 409).length;
    assert.equal(
      accepted,
      STOCK,
      `statuses: ${JSON.stringify(statuses.filter((s) => s !== 202 && s !== 409))}`,
    );
    assert.equal(accepted + soldOut, ORDERS);
    await drained(svc.url, PRODUCT);
    const shown = await agreesWithAdmin(svc.url, PRODUCT, page);
    assert.equal(shown.sold, STOCK);
    assert.equal(shown.awaiting, STOCK, 'every order waits for its payment');
    assert.equal(shown.soldOut, 'SOLD OUT');
    // The outcome counts the page charted are the client's own: every 202 and every 409.
    const totals = await shownOnce(
      'the charts to count every answer',
      (s) => s.accepted === accepted && s.soldOutAnswers === soldOut,
      page,
      30_000,
    );
    assert.equal(totals.accepted, accepted);
    assert.deepEqual(pageErrors, []);
  });

  it("the service's own changes are named: the sold-out consolidation, expired units back on sale", async () => {
    // 10 units over 8 shards (2, 2, 1, 1, ...): an order for 3 finds every shard short and the service
    // regroups the stock into 3 shards. That order is paid; a second one, left unpaid, expires and its
    // unit comes back on sale in a new generation, whose shards have sold nothing yet.
    await createSale(svc.url, 'dash-c', { stock: 10, shards: 8, paymentTimeoutSec: 5 });
    // Signed in on this origin (the tab's sessionStorage) whether or not the tests before ran.
    await page.evaluate((t) => sessionStorage.setItem('flashsale.adminToken', t), ADMIN_TOKEN);
    await page.goto(`${svc.url}/dashboard?product=dash-c`);
    await shownOnce('the page shows the new sale', (s) => s.available === 10, page, 20_000);
    const order = (userId: string, quantity: number) =>
      call(svc.url, 'POST', '/api/orders', { productId: 'dash-c', userId, quantity });
    const big = await order('big', 3);
    assert.equal(big.status, 202, JSON.stringify(big.body));
    const paid = await call(svc.url, 'POST', `/api/orders/${big.body.orderId}/pay`, { userId: 'big' });
    assert.equal(paid.status, 200, JSON.stringify(paid.body));
    assert.equal((await order('late', 1)).status, 202);
    const expired = await shownOnce(
      'the page shows the unpaid order expired and its unit back',
      (s) => s.expired === 1 && s.available === 7,
      page,
      30_000,
    );
    assert.match(expired.lastChange, /by the service/);
    const shown = await agreesWithAdmin(svc.url, 'dash-c', page);
    const causes = shown.changes.map((c) => c.by);
    assert.deepEqual(causes, ['returns', 'consolidation', 'admin'], JSON.stringify(shown.changes));
    // The paid units were sold by shards of earlier generations: the table says so, and adds up.
    assert.deepEqual([shown.sold, shown.earlierSold, shown.paid], [3, 3, 1]);
    await page.screenshot({ path: SCREENSHOT.replace(/\.png$/, '-changes.png'), fullPage: true });
    assert.deepEqual(pageErrors, []);
  });
});
