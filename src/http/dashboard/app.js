// The dashboard page's script: asks for the admin token (kept in sessionStorage), then polls
// GET /admin/products/:id/live every second and draws it. Plain browser JavaScript, no build step.
/* global uPlot */

const TOKEN_KEY = 'flashsale.adminToken';
const POLL_MS = 1000;
/** Points kept per chart (the server keeps five minutes of one-second points). */
const MAX_POINTS = 300;
const GROUPS = ['accepted', 'sold_out', 'queued', 'busy', 'errors_5xx'];

const $ = (id) => document.getElementById(id);

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

const fmt = (n, digits = 0) =>
  n === null || n === undefined || Number.isNaN(n)
    ? '–'
    : Number(n).toLocaleString('en-US', { maximumFractionDigits: digits, minimumFractionDigits: 0 });
const fmtMs = (n) => (n === null || n === undefined ? '–' : `${fmt(n, n < 10 ? 2 : 1)} ms`);

function setText(id, text) {
  const el = $(id);
  if (el.textContent !== text) el.textContent = text;
}

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
  setText('reserved', fmt(s.reserved));
  setText('confirmed', fmt(s.confirmed));
  setText('failed-jobs', fmt(s.failedJobs?.count ?? 0));
  setText('sold-out', s.pending ? 'change pending' : s.soldOut ? 'SOLD OUT' : 'selling');
  $('sold-out').className = `value ${s.soldOut ? 'alarm' : 'ok'}`;
  setText('generation', `${s.generation} · ${s.shards.length}`);
  const hasWindow = s.startsAt !== undefined || s.endsAt !== undefined;
  $('window-card').hidden = !hasWindow;
  if (hasWindow) setText('window', `${s.startsAt ?? '…'} → ${s.endsAt ?? '…'}`);
  $('pending-card').hidden = !s.pending;
  if (s.pending) setText('pending', JSON.stringify(s.pending));
  renderShards(s);
  renderLine(live.waitingRoom);
  renderReplicas(live.replicas);

  append(state.rates, live.rates);
  append(state.sales, live.saleHistory);
  append(state.queue, [{ t: live.at, ...live.queue }]);
  renderNow(live);
  renderCharts();
  setText(
    'status-line',
    `${live.productId} · replica ${live.replica.hostname}:${live.replica.pid} · ${new Date(live.at).toLocaleTimeString()}`,
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

/** The waiting room's line of the product: shown while buyers wait. */
function renderLine(line) {
  $('line-card').hidden = !line;
  if (!line) return;
  setText(
    'line',
    `${fmt(line.waiting)} waiting · ${fmt(line.admittedPerSecond, 1)}/s let in · lag ${fmtMs(line.servingLagMs)} · ETA ${fmtMs(line.etaMs)}`,
  );
}

function renderNow(live) {
  const now = live.now;
  setText('now-window', now ? `(last ${fmt(now.seconds, 0)} s, this replica)` : '(warming up)');
  for (const g of GROUPS) setText(`rate-${g}`, now ? fmt(now.ordersPerSecond[g], 1) : '–');
  setText('rate-invalid-tickets', now ? fmt(now.invalidTicketsPerSecond, 1) : '–');
  setText('latency', now ? `${fmtMs(now.acceptedP50Ms)} / ${fmtMs(now.acceptedP99Ms)}` : '–');
  setText('lock-wait', now ? fmtMs(now.lockWaitP99Ms) : '–');
  setText('handoffs', now ? fmt(now.handoffsPerSecond, 1) : '–');
  const q = live.queue;
  setText('queue', `${fmt(q.waiting)} · ${fmt(q.active)} · ${fmt(q.delayed)}  (failed ${fmt(q.failed)})`);
  setText('lag', q.lagSeconds === null ? '–' : `${fmt(q.lagSeconds, 2)} s`);
  setText('persisted', fmt(now?.persistedPerSecond, 1));
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

function renderShards(s) {
  const tbody = $('shards').tBodies[0];
  const withMaster = s.shards.some((x) => x.master !== undefined);
  for (const el of document.querySelectorAll('.master-col')) el.hidden = !withMaster;
  // 100 % is an even share of what the generation started with, or the fullest shard if above it.
  const scale = Math.max(1, ...s.shards.map((x) => x.stock + x.sold));
  while (tbody.rows.length > s.shards.length) tbody.deleteRow(-1);
  s.shards.forEach((shard, i) => {
    const row = tbody.rows[i] ?? tbody.insertRow();
    if (row.cells.length === 0) {
      row.innerHTML =
        '<td class="index"></td><td class="key"></td><td class="bar-col"><div class="bar"><div class="fill"></div></div></td>' +
        '<td class="stock num"></td><td class="sold num"></td><td class="master master-col"></td>';
    }
    row.dataset.shard = String(shard.index);
    row.dataset.stock = String(shard.stock);
    row.classList.toggle('retired', shard.retired === true);
    row.cells[0].textContent = String(shard.index);
    row.cells[1].textContent = shard.key;
    const fill = row.cells[2].firstElementChild.firstElementChild;
    fill.style.width = `${Math.min(100, (shard.stock / scale) * 100)}%`;
    fill.classList.toggle('empty', shard.stock === 0);
    row.cells[3].textContent = fmt(shard.stock);
    row.cells[4].textContent = fmt(shard.sold);
    row.cells[5].textContent = shard.master ?? '';
    row.cells[5].hidden = !withMaster;
  });
}

const COLORS = {
  accepted: '#2e9d5b',
  sold_out: '#7a6ff0',
  queued: '#0e9aa7',
  busy: '#e0a31a',
  errors_5xx: '#d64545',
  p50: '#3b82c4',
  p99: '#d64545',
  lock: '#d97706',
  handoffs: '#6b7280',
  queue: '#3b82c4',
  reserved: '#e0a31a',
  persisted: '#2e9d5b',
};

function chart(el, series, axes = [{}, {}]) {
  const opts = {
    width: el.clientWidth || 480,
    height: 180,
    series: [
      {},
      ...series.map(([label, color, scale]) => ({ label, stroke: color, width: 2, scale: scale ?? 'y' })),
    ],
    axes: [{}, ...axes.slice(1)],
    // One point has no span: show the minute before it rather than uPlot's years-wide default.
    scales: { x: { time: true, range: (_u, min, max) => [min === max ? max - 60 : min, max] } },
    legend: { live: false },
  };
  return new uPlot(opts, [[], ...series.map(() => [])], el);
}

function renderCharts() {
  if (!state.charts) {
    state.charts = {
      orders: chart($('chart-orders'), [
        ['202 accepted', COLORS.accepted],
        ['409 sold_out', COLORS.sold_out],
        ['429 queued', COLORS.queued],
        ['429 busy', COLORS.busy],
        ['5xx', COLORS.errors_5xx],
      ]),
      latency: chart($('chart-latency'), [
        ['p50', COLORS.p50],
        ['p99', COLORS.p99],
      ]),
      lock: chart(
        $('chart-lock'),
        [
          ['wait p99 ms', COLORS.lock, 'y'],
          ['hand-offs/s', COLORS.handoffs, 'h'],
        ],
        [{}, {}, { scale: 'h', side: 1, grid: { show: false } }],
      ),
      writer: chart(
        $('chart-writer'),
        [
          ['queue (waiting+active+delayed)', COLORS.queue, 'y'],
          ['outstanding units', COLORS.reserved, 'y'],
          ['persisted/s', COLORS.persisted, 'p'],
        ],
        [{}, {}, { scale: 'p', side: 1, grid: { show: false } }],
      ),
    };
    window.addEventListener('resize', resizeCharts);
  }
  const r = state.rates;
  const xs = r.map((p) => p.t / 1000);
  state.charts.orders.setData([xs, ...GROUPS.map((g) => r.map((p) => p.ordersPerSecond[g]))]);
  state.charts.latency.setData([xs, r.map((p) => p.acceptedP50Ms), r.map((p) => p.acceptedP99Ms)]);
  state.charts.lock.setData([xs, r.map((p) => p.lockWaitP99Ms), r.map((p) => p.handoffsPerSecond)]);
  // The writer chart mixes the queue (one point per poll) with the sale's reads: one time axis each
  // would need two charts, so each point carries the nearest earlier value of the other series.
  const q = state.queue;
  const sales = state.sales;
  let j = 0;
  const rows = q.map((p) => {
    while (j + 1 < sales.length && sales[j + 1].t <= p.t) j++;
    const sale = sales[j];
    return [
      p.t / 1000,
      p.waiting + p.active + p.delayed,
      sale?.reserved ?? null,
      sale?.persistedPerSecond ?? null,
    ];
  });
  state.charts.writer.setData([0, 1, 2, 3].map((k) => rows.map((row) => row[k])));
}

function resizeCharts() {
  for (const [id, c] of Object.entries(state.charts ?? {})) {
    c.setSize({ width: $(`chart-${id}`).clientWidth, height: 180 });
  }
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
