// The dashboard page's script: asks for the admin token (kept in sessionStorage), then polls
// GET /admin/products/:id/live every second and draws it. Plain browser JavaScript, no build step.
import { drawCharts, GROUPS } from './charts.js';
import { $, setText } from './dom.js';
import { DASH, fmt, fmtMs, fmtTime, lastChangeText, lineText, settingRows } from './format.js';
import { renderChanges, renderShards } from './tables.js';

const TOKEN_KEY = 'flashsale.adminToken';
const POLL_MS = 1000;
/** Points kept per chart (the server keeps five minutes of one-second points). */
const MAX_POINTS = 300;

const state = {
  product: '',
  /** Bumped when the product or token changes, so an answer to an older poll is dropped. */
  epoch: 0,
  timer: undefined,
  rates: [],
  sales: [],
  queue: [],
  charts: undefined,
};

function showError(message) {
  $('error').textContent = message;
  $('error').hidden = message === '';
}

function showLogin(message) {
  stopPolling();
  $('view').hidden = true;
  $('sign-out').hidden = true;
  $('login').hidden = false;
  showError(message);
  $('token').focus();
}

function stopPolling() {
  clearTimeout(state.timer);
  state.timer = undefined;
  state.epoch += 1;
}

function start() {
  stopPolling();
  state.rates = [];
  state.sales = [];
  state.queue = [];
  if (!sessionStorage.getItem(TOKEN_KEY)) return showLogin('');
  if (!state.product) {
    $('login').hidden = true;
    return showError('Enter a product id to watch.');
  }
  $('login').hidden = true;
  $('sign-out').hidden = false;
  void poll(state.epoch);
}

async function poll(epoch) {
  const since = Math.min(state.rates.at(-1)?.t ?? 0, state.sales.at(-1)?.t ?? 0);
  let res;
  let body;
  try {
    res = await fetch(
      `/admin/products/${encodeURIComponent(state.product)}/live?since=${Math.floor(since)}`,
      {
        headers: { authorization: `Bearer ${sessionStorage.getItem(TOKEN_KEY)}` },
        cache: 'no-store',
      },
    );
    body = await res.json().catch(() => ({}));
  } catch (err) {
    if (epoch !== state.epoch) return;
    showError(`service unreachable: ${err.message}`);
    return schedule(epoch);
  }
  if (epoch !== state.epoch) return;
  if (res.status === 401 || res.status === 403) {
    sessionStorage.removeItem(TOKEN_KEY);
    return showLogin(
      `The admin token was refused (${res.status} ${body.error ?? ''}): ${body.message ?? ''}`,
    );
  }
  if (!res.ok) {
    if (res.status === 404) $('view').hidden = true;
    showError(`${res.status} ${body.error ?? ''}: ${body.message ?? res.statusText}`);
    return schedule(epoch);
  }
  showError('');
  render(body);
  schedule(epoch);
}

function schedule(epoch) {
  if (epoch === state.epoch) state.timer = setTimeout(() => void poll(epoch), POLL_MS);
}

/** Appends the points newer than the last one held, keeping the newest MAX_POINTS. */
function append(list, points) {
  const last = list.at(-1)?.t ?? 0;
  for (const p of points) if (p.t > last) list.push(p);
  list.splice(0, Math.max(0, list.length - MAX_POINTS));
}

function render(live) {
  const s = live.sale;
  $('view').hidden = false;
  $('view').dataset.product = live.productId;
  setText('available', fmt(s.available));
  setText('sold', fmt(s.sold));
  setText('total', fmt(s.total));
  setText('units', `${fmt(s.sold)} = ${fmt(s.reserved)} + ${fmt(s.confirmed)} + ${fmt(s.paid)}`);
  setText('returning', fmt(s.returning));
  setText('awaiting', fmt(s.awaitingPayment));
  setText('paid', fmt(s.orders.paid));
  setText('expired', fmt(s.orders.expired));
  setText('cancelled', fmt(s.orders.cancelled));
  setText('failed-jobs', fmt(s.failedJobs?.count ?? 0));
  setText('sold-out', s.pending ? 'change pending' : s.soldOut ? 'SOLD OUT' : 'selling');
  $('sold-out').className = `value ${s.soldOut ? 'alarm' : 'ok'}`;
  setText('generation', `${s.generation} · ${s.shards.length}`);
  setText('last-change', lastChangeText(s.changes[0]));
  renderSettings(s);
  $('pending-card').hidden = !s.pending;
  if (s.pending) setText('pending', `${s.pending.action} since ${fmtTime(s.pending.since)}`);
  renderShards(s);
  renderChanges(s.changes);
  renderLine(live.waitingRoom);
  renderReplicas(live.replicas);

  append(state.rates, live.rates);
  append(state.sales, live.saleHistory);
  append(state.queue, [{ t: live.at, ...live.queue }]);
  renderNow(live);
  drawCharts(state, $);
  setText(
    'status-line',
    `${live.productId} · replica ${live.replica.hostname}:${live.replica.pid} · ${new Date(live.at).toLocaleTimeString()}`,
  );
}

/** The settings as a definition list, rebuilt only when they change. */
function renderSettings(s) {
  const rows = settingRows(s);
  const el = $('settings');
  const key = JSON.stringify(rows);
  if (el.dataset.key === key) return;
  el.dataset.key = key;
  el.replaceChildren(
    ...rows.flatMap(([label, text, iso]) => {
      const dt = document.createElement('dt');
      const dd = document.createElement('dd');
      dt.textContent = label;
      const value = iso ? document.createElement('time') : dd;
      value.textContent = text;
      if (iso) {
        value.dateTime = iso;
        dd.append(value);
      }
      return [dt, dd];
    }),
  );
}

/** Masters short of replicas (REDIS_WAIT_REPLICAS): their shards answer 503 until a replica is back. */
function renderReplicas(r) {
  const short = r?.mastersShort ?? 0;
  setText(
    'replicas',
    short === 0
      ? 'every master replicated'
      : `${fmt(short)} master(s) short · ${fmt(r.unitsStranded)} units stranded (503 until a replica is added)`,
  );
  $('replicas').className = `value small ${short === 0 ? 'ok' : 'alarm'}`;
}

/** The waiting room's line of the product, as its public view shows it: shown while buyers wait. */
function renderLine(line) {
  $('line-card').hidden = !line;
  if (line) setText('line', lineText(line));
}

/** Per second between the first and last sale reads of the last `seconds`, for one figure. */
function saleRate(pick, seconds = 10) {
  const last = state.sales.at(-1);
  const first = state.sales.find((p) => p.t >= (last?.t ?? 0) - seconds * 1000);
  if (!last || !first || last.t === first.t) return null;
  return Math.max(0, pick(last) - pick(first)) / ((last.t - first.t) / 1000);
}

function renderNow(live) {
  const now = live.now;
  setText('sale-window', state.sales.length > 1 ? '(last 10 s)' : '(warming up)');
  setText(
    'sold-rate',
    fmt(
      saleRate((p) => p.sold),
      1,
    ),
  );
  setText(
    'expired-rate',
    fmt(
      saleRate((p) => p.expired),
      1,
    ),
  );
  setText('persisted', fmt(now?.persistedPerSecond, 1));
  setText(
    'now-window',
    now ? `(last ${fmt(now.seconds, 0)} s, replica ${live.replica.pid})` : '(warming up)',
  );
  for (const g of GROUPS) setText(`rate-${g}`, now ? fmt(now.ordersPerSecond[g], 1) : DASH);
  setText('rate-invalid-tickets', now ? fmt(now.invalidTicketsPerSecond, 1) : DASH);
  setText('latency', now ? `${fmtMs(now.acceptedP50Ms)} / ${fmtMs(now.acceptedP99Ms)}` : DASH);
  setText('lock-wait', now ? fmtMs(now.lockWaitP99Ms) : DASH);
  setText('handoffs', now ? fmt(now.handoffsPerSecond, 1) : DASH);
  const q = live.queue;
  setText('queue', `${fmt(q.waiting)} · ${fmt(q.active)} · ${fmt(q.delayed)}  (failed ${fmt(q.failed)})`);
  setText('lag', q.lagSeconds === null ? DASH : `${fmt(q.lagSeconds, 2)} s`);
  const totals = GROUPS.map((g) =>
    Math.round(state.rates.reduce((sum, p) => sum + p.ordersPerSecond[g] * p.seconds, 0)),
  );
  setText('window-totals', totals.map((n) => fmt(n)).join(' · '));
  const el = $('window-totals');
  el.dataset.points = String(state.rates.length);
  GROUPS.forEach((g, i) => {
    el.dataset[g] = String(totals[i]);
  });
}

function productFromUrl() {
  return new URLSearchParams(location.search).get('product') ?? '';
}

$('login-form').addEventListener('submit', (e) => {
  e.preventDefault();
  sessionStorage.setItem(TOKEN_KEY, $('token').value.trim());
  $('token').value = '';
  start();
});
$('product-form').addEventListener('submit', (e) => {
  e.preventDefault();
  state.product = $('product').value.trim();
  const url = new URL(location.href);
  url.searchParams.set('product', state.product);
  history.replaceState(null, '', url);
  $('view').hidden = true;
  start();
});
$('sign-out').addEventListener('click', () => {
  sessionStorage.removeItem(TOKEN_KEY);
  showLogin('');
});

state.product = productFromUrl();
$('product').value = state.product;
start();
