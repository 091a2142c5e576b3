// The dashboard's five charts (uPlot, a global of uPlot.iife.min.js): created on the first answer,
// fed the points the page holds, axes labelled compactly with room between ticks so none overlap.
/* global uPlot */
import { fmtAxis } from './format.js';

export const GROUPS = ['accepted', 'sold_out', 'queued', 'busy', 'errors_5xx'];
const HEIGHT = 190;

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
  sold: '#3b82c4',
  paid: '#2e9d5b',
  awaiting: '#e0a31a',
  expired: '#d64545',
};

/** A y axis: compact labels (1.2k), wide enough for them; `side` 1 puts it on the right, without grid. */
const yAxis = (scale, side = 3) => ({
  scale,
  side,
  size: 58,
  values: (_u, splits) => splits.map(fmtAxis),
  ...(side === 1 && { grid: { show: false } }),
});

function chart(el, series) {
  const scales = [...new Set(series.map(([, , scale]) => scale ?? 'y'))];
  const opts = {
    width: el.clientWidth || 480,
    height: HEIGHT,
    series: [
      {},
      ...series.map(([label, color, scale]) => ({ label, stroke: color, width: 2, scale: scale ?? 'y' })),
    ],
    // Time ticks at least 90 px apart: "21:14:05" labels never touch.
    axes: [{ space: 90 }, ...scales.map((scale, i) => yAxis(scale, i === 0 ? 3 : 1))],
    // One point has no span: show the minute before it rather than uPlot's years-wide default.
    scales: { x: { time: true, range: (_u, min, max) => [min === max ? max - 60 : min, max] } },
    legend: { live: false },
  };
  return new uPlot(opts, [[], ...series.map(() => [])], el);
}

function create($) {
  return {
    sale: chart($('chart-sale'), [
      ['units sold', COLORS.sold],
      ['units paid', COLORS.paid],
      ['orders awaiting payment', COLORS.awaiting],
      ['orders expired', COLORS.expired],
    ]),
    writer: chart($('chart-writer'), [
      ['queue (waiting+active+delayed)', COLORS.queue, 'y'],
      ['outstanding units', COLORS.reserved, 'y'],
      ['persisted/s', COLORS.persisted, 'p'],
    ]),
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
    lock: chart($('chart-lock'), [
      ['wait p99 ms', COLORS.lock, 'y'],
      ['hand-offs/s', COLORS.handoffs, 'h'],
    ]),
  };
}

/**
 * The writer chart mixes the queue (one point per poll) with the sale's reads: each queue point
 * carries the nearest earlier sale read.
 */
function writerRows(queue, sales) {
  let j = 0;
  return queue.map((p) => {
    while (j + 1 < sales.length && sales[j + 1].t <= p.t) j++;
    const sale = sales[j];
    return [
      p.t / 1000,
      p.waiting + p.active + p.delayed,
      sale?.reserved ?? null,
      sale?.persistedPerSecond ?? null,
    ];
  });
}

/** Draws the points held: `state` has rates (this process), sales (the product's reads) and queue. */
export function drawCharts(state, $) {
  if (!state.charts) {
    state.charts = create($);
    window.addEventListener('resize', () => {
      for (const [id, c] of Object.entries(state.charts)) {
        c.setSize({ width: $(`chart-${id}`).clientWidth, height: HEIGHT });
      }
    });
  }
  const r = state.rates;
  const xs = r.map((p) => p.t / 1000);
  const c = state.charts;
  c.orders.setData([xs, ...GROUPS.map((g) => r.map((p) => p.ordersPerSecond[g]))]);
  c.latency.setData([xs, r.map((p) => p.acceptedP50Ms), r.map((p) => p.acceptedP99Ms)]);
  c.lock.setData([xs, r.map((p) => p.lockWaitP99Ms), r.map((p) => p.handoffsPerSecond)]);
  const s = state.sales;
  c.sale.setData([
    s.map((p) => p.t / 1000),
    s.map((p) => p.sold),
    s.map((p) => p.paid),
    s.map((p) => p.awaitingPayment),
    s.map((p) => p.expired),
  ]);
  const rows = writerRows(state.queue, s);
  c.writer.setData([0, 1, 2, 3].map((k) => rows.map((row) => row[k])));
}
