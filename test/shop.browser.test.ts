// The buyers' waiting page in a real headless Chromium, ordering through the client's browser build:
// a countdown that turns into an order, a queued buyer whose place falls, a sold-out ending, and a
// deployment that asks for a token; with the dashboard's CSP and no script error. Saves a screenshot
// of the first three (SHOP_SCREENSHOTS, default .bench/; docs/shop-*.png are these).
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { SignJWT } from 'jose';
import type { Page } from 'puppeteer-core';
import { until } from '../harness/async.ts';
import { type HeadlessBrowser, launchBrowser } from '../harness/browser.ts';
import { admin, call, createSale, drained, placeOrder } from '../harness/service.ts';
import { advance, crowd } from './support/crowd.ts';
import { useService } from './support/suite.ts';

const SHOTS = process.env.SHOP_SCREENSHOTS || '.bench';
const JWT_SECRET = 'shop-test-jwt-secret-0123456789abcdef';
/** Buyers ahead of the page's buyer, more than the service's own idle capacity lets in meanwhile. */
const LONG_LINE = 2_000_000;

/** What the page shows: which panel, and its figures. */
const READ_PAGE = `(() => {
  const text = (id) => document.getElementById(id).textContent.trim();
  const panel = ['countdown', 'waiting', 'ordered', 'over'].find((id) => !document.getElementById(id).hidden);
  return { panel, opensIn: text('opens-in'), position: text('position'), left: text('left'), orderId: text('order-id'),
    payBy: document.getElementById('pay-by').hidden ? '' : text('pay-by-time'), over: text('over-title'),
    announced: text('announce'), error: text('error'), stock: text('stock') };
})()`;

interface Shown {
  panel?: string;
  opensIn: string;
  position: string;
  left: string;
  orderId: string;
  payBy: string;
  over: string;
  announced: string;
  error: string;
  stock: string;
}

const shown = (page: Page) => page.evaluate(READ_PAGE) as Promise<Shown>;

function once(page: Page, what: string, ready: (s: Shown) => boolean, everyMs = 100): Promise<Shown> {
  return until(
    what,
    async () => {
      const s = await shown(page);
      return ready(s) && s;
    },
    { timeoutMs: 60_000, everyMs, describe: async () => JSON.stringify(await shown(page)) },
  );
}

let chrome: HeadlessBrowser | undefined;
const pageErrors: string[] = [];

before(() => {
  // The page imports the client's browser build (dist/browser.js), as a deployment serves it.
  execFileSync('npm', ['run', 'build', '-w', '@flashsale/client'], { stdio: 'ignore' });
  mkdirSync(SHOTS, { recursive: true });
});
before(async () => {
  chrome = await launchBrowser();
});
after(async () => {
  await chrome?.close();
  assert.deepEqual(pageErrors, []);
});

/** A buyer on the page: opens it, types its identity into `field` and joins with the keyboard. */
async function joinAt(url: string, productId: string, field: 'user' | 'token', value: string): Promise<Page> {
  const page = await (chrome as HeadlessBrowser).browser.newPage();
  page.on('pageerror', (err) => pageErrors.push(String(err)));
  const res = await page.goto(`${url}/shop/${productId}`);
  assert.match(res?.headers()['content-security-policy'] ?? '', /default-src 'self'/);
  await page.waitForSelector(`#join:not([hidden]) #${field}`);
  await page.focus(`#${field}`);
  await page.keyboard.type(value);
  await page.keyboard.press('Enter');
  return page;
}

describe('GET /shop/:productId in headless Chromium', () => {
  const { infra, svc } = useService();
  const joinSale = (productId: string, userId: string) => joinAt(svc.url, productId, 'user', userId);

  it('a countdown to the opening turns into an order with its payment deadline', async () => {
    const startsAt = new Date(Date.now() + 4000).toISOString();
    await createSale(svc.url, 'shop-soon', { stock: 3, shards: 1, startsAt, paymentTimeoutSec: 900 });
    const page = await joinSale('shop-soon', 'alice');
    const counting = await once(
      page,
      'the countdown',
      (s) => s.panel === 'countdown' && /\d+ s/.test(s.opensIn),
    );
    assert.match(counting.announced, /The sale opens in/);
    await page.screenshot({ path: join(SHOTS, 'shop-countdown.png') });
    const done = await once(page, 'the order', (s) => s.panel === 'ordered' && s.payBy !== '');
    assert.match(done.orderId, /\S/);
    assert.match(done.announced, /You got it/);
    assert.equal(await page.evaluate(() => document.activeElement?.id), 'ordered');
    await page.screenshot({ path: join(SHOTS, 'shop-ordered.png') });
    assert.equal((await drained(svc.url, 'shop-soon')).sold, 1);
    await page.close();
  });

  it('a queued buyer sees its place fall, then its order', async () => {
    await createSale(svc.url, 'shop-line', { stock: 50, shards: 2 });
    const other = await crowd(infra.client, svc.url, 'shop-line', LONG_LINE);
    const page = await joinSale('shop-line', 'bob');
    const positions: number[] = [];
    // The other process serves half the line when the buyer first sees its place, the rest at the next.
    const track = (s: Shown) => {
      const at = Number(s.position.replace(/,/g, ''));
      if (s.panel !== 'waiting' || positions.at(-1) === at) return;
      positions.push(at);
      void advance(other, 'shop-line', positions.length === 1 ? LONG_LINE / 2 : LONG_LINE);
    };
    track(await once(page, 'the place in line', (s) => s.panel === 'waiting'));
    await page.screenshot({ path: join(SHOTS, 'shop-queued.png') });
    const end = await once(
      page,
      'the order after the line',
      (s) => {
        track(s);
        return s.panel === 'ordered';
      },
      50,
    );
    other.room.stop();
    assert.ok(positions.length >= 2 && (positions.at(-1) ?? 0) < (positions[0] ?? 0), `${positions}`);
    assert.match(end.orderId, /\S/);
    await page.close();
  });

  it('a buyer who comes after the last unit is told it is sold out', async () => {
    await createSale(svc.url, 'shop-gone', { stock: 1, shards: 1 });
    const first = await placeOrder(svc.url, { productId: 'shop-gone', userId: 'early' });
    assert.equal(first.status, 202);
    const page = await joinSale('shop-gone', 'carol');
    const end = await once(page, 'the sold-out ending', (s) => s.panel === 'over');
    assert.equal(end.over, 'Sold out');
    assert.equal(end.stock, 'Sold out');
    await page.screenshot({ path: join(SHOTS, 'shop-sold-out.png') });
    await page.close();
  });
});

describe('GET /shop/:productId under BUYER_AUTH=jwt', () => {
  const { svc } = useService({ BUYER_AUTH: 'jwt', BUYER_JWT_SECRET: JWT_SECRET });

  it('asks for a sign-in token, not a user id, and orders as the token’s buyer', async () => {
    await createSale(svc.url, 'shop-jwt', { stock: 2, shards: 1 });
    const jwt = await new SignJWT({})
      .setProtectedHeader({ alg: 'HS256' })
      .setSubject('dora')
      .setExpirationTime('10m')
      .sign(new TextEncoder().encode(JWT_SECRET));
    const page = await joinAt(svc.url, 'shop-jwt', 'token', jwt);
    assert.equal(await page.$eval('#user-field', (el) => (el as HTMLElement).hidden), true);
    const end = await once(page, 'the order', (s) => s.panel === 'ordered');
    const order = await call(svc.url, 'GET', `/api/orders/${end.orderId}`, undefined, admin);
    assert.equal(order.body.userId, 'dora');
    await page.close();
  });
});
