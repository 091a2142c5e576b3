// What a person reads on the dashboard page, taken from its elements in headless Chromium: every card
// as shown (and whether it is on screen), the figures, the shard and change tables, the settings.
import type { Page } from 'puppeteer-core';
import { until } from '../../harness/async.ts';

export interface Shown {
  viewShown: boolean;
  /** Labels of the cards on screen whose value is empty (a person sees a blank box). */
  emptyCards: string[];
  /** Labels of the cards on screen. */
  visibleCards: string[];
  available: number | null;
  sold: number | null;
  total: number | null;
  returning: number | null;
  awaiting: number | null;
  paid: number | null;
  expired: number | null;
  cancelled: number | null;
  failedJobs: number | null;
  /** The "sold = reserved + confirmed + paid" card, as its four numbers. */
  units: number[];
  soldOut: string;
  generation: string;
  lastChange: string;
  /** The settings card: label → text; a time's label → its ISO `datetime`, under "<label> at". */
  settings: Record<string, string>;
  shards: { index: number; stock: number; sold: number }[];
  /** The shard table's rows below the shards: sold by earlier generations, and the column sums. */
  earlierSold: number | null;
  shardsAvailable: number | null;
  shardsSold: number | null;
  /** The change table's rows, newest first. */
  changes: { generation: number; by: string }[];
  line: string | null;
  accepted: number;
  soldOutAnswers: number;
  acceptedRate: number | null;
  /** Points in the page's charts. */
  points: number;
}

// Sent as source text: tsx would wrap a named function in helpers the page does not have.
const READ_PAGE = `(() => {
  const $ = (id) => document.getElementById(id);
  const toNum = (text) => (text === '' || text === '\u2013' ? null : Number(text.replace(/,/g, '')));
  const num = (id) => toNum($(id)?.textContent ?? '');
  const onScreen = (el) => el.getClientRects().length > 0 && getComputedStyle(el).visibility !== 'hidden';
  const cards = [...document.querySelectorAll('.card')].filter(onScreen).map((c) => ({
    label: c.querySelector('.label')?.textContent ?? '',
    value: (c.querySelector('.value')?.textContent ?? '').trim(),
  }));
  const totals = $('window-totals').dataset;
  const dts = [...document.querySelectorAll('#settings dt')];
  return {
    viewShown: onScreen($('view')),
    emptyCards: cards.filter((c) => c.value === '').map((c) => c.label),
    visibleCards: cards.map((c) => c.label),
    available: num('available'),
    sold: num('sold'),
    total: num('total'),
    returning: num('returning'),
    awaiting: num('awaiting'),
    paid: num('paid'),
    expired: num('expired'),
    cancelled: num('cancelled'),
    failedJobs: num('failed-jobs'),
    units: ($('units')?.textContent ?? '').split(/[=+]/).map((t) => toNum(t.trim())),
    soldOut: $('sold-out').textContent,
    generation: $('generation').textContent,
    lastChange: $('last-change').textContent,
    settings: Object.fromEntries(
      dts.flatMap((dt) => {
        const dd = dt.nextElementSibling;
        const time = dd?.querySelector('time');
        return [[dt.textContent, dd?.textContent ?? ''], ...(time ? [[dt.textContent + ' at', time.dateTime]] : [])];
      }),
    ),
    shards: [...document.querySelectorAll('#shards tbody tr')].map((r) => ({
      index: Number(r.dataset.shard),
      stock: Number(r.dataset.stock),
      sold: Number(r.dataset.sold),
    })),
    earlierSold: num('earlier-sold'),
    shardsAvailable: num('shards-available'),
    shardsSold: num('shards-sold'),
    changes: [...document.querySelectorAll('#changes tbody tr[data-by]')].map((r) => ({
      generation: Number(r.cells[1].textContent),
      by: r.dataset.by,
    })),
    line: onScreen($('line-card')) ? $('line').textContent : null,
    accepted: Number(totals.accepted ?? NaN),
    soldOutAnswers: Number(totals.sold_out ?? NaN),
    acceptedRate: num('rate-accepted'),
    points: Number(totals.points ?? 0),
  };
})()`;

/** What the page shows, read from its elements. */
export function pageNumbers(page: Page): Promise<Shown> {
  return page.evaluate(READ_PAGE) as Promise<Shown>;
}

/** What the page shows once `ready` holds (read every 200 ms); fails naming `what` after timeoutMs. */
export function shownOnce(
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

export async function signIn(page: Page, token: string): Promise<void> {
  await page.waitForSelector('#login:not([hidden]) #token');
  await page.type('#token', token);
  await page.click('#login-form button[type=submit]');
}

/** GET /admin/products/:id's fields the page shows. */
export interface AdminStatus {
  available: number;
  sold: number;
  total: number;
  reserved: number;
  confirmed: number;
  paid: number;
  returning: number;
  awaitingPayment: number;
  orders: { paid: number; expired: number; cancelled: number };
  generation: number;
  shards: { index: number; stock: number; sold: number }[];
  changes: { generation: number; by: string }[];
  failedJobs: { count: number };
}

/** The page's figures as GET /admin/products/:id has them: what `shown` must equal. */
export function expectedFigures(a: AdminStatus): Record<string, unknown> {
  return {
    available: a.available,
    sold: a.sold,
    total: a.total,
    returning: a.returning,
    awaiting: a.awaitingPayment,
    paid: a.orders.paid,
    expired: a.orders.expired,
    cancelled: a.orders.cancelled,
    failedJobs: a.failedJobs.count,
    units: [a.sold, a.reserved, a.confirmed, a.paid],
    generation: `${a.generation} · ${a.shards.length}`,
    shards: a.shards.map((s) => ({ index: s.index, stock: s.stock, sold: s.sold })),
    // The shard table's sold column adds up to the sold card.
    shardsSold: a.sold,
    earlierSold: a.sold - a.shards.reduce((sum, s) => sum + s.sold, 0),
    shardsAvailable: a.available,
    changes: a.changes.map((c) => ({ generation: c.generation, by: c.by })),
  };
}

/** The same fields of what the page shows. */
export function shownFigures(s: Shown): Record<string, unknown> {
  const { available, sold, total, returning, awaiting, paid, expired, cancelled, failedJobs, units } = s;
  return {
    available,
    sold,
    total,
    returning,
    awaiting,
    paid,
    expired,
    cancelled,
    failedJobs,
    units,
    generation: s.generation,
    shards: s.shards,
    shardsSold: s.shardsSold,
    earlierSold: s.earlierSold,
    shardsAvailable: s.shardsAvailable,
    changes: s.changes,
  };
}
