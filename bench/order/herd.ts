// The bench's herd phase (BENCH_ONLY=herd): a sale whose buyers outnumber what the service can serve,
// with WAITING_ROOM=on and =off back to back, and its figures against issue 24's targets.
//   3s     stock S = 3 s of measured capacity, B = 4 x S buyers, first requests spread over 3 s
//   1s     S = 1 s of capacity, B = 10 x S within 1 s
// Printed for each: sell-out time / (S / capacity), fairness (share of the S units that went to the
// first 1.05 x S buyers by first-request time), requests per buyer, p99 of every answer from its send,
// how long after its poll was due each waiting buyer learnt the sell-out, and the invariants.
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Redis } from 'ioredis';
import { call, type Spawned } from '../../harness/service.ts';
import { environment, envNumber, writeJson } from '../lib/output.ts';
import { percentile, type Summary, summarize } from '../lib/stats.ts';
import { type Check, ms, num, printChecks, printTable, times } from '../lib/table.ts';
import { type AnswerCost, answerCost } from './answer-cost.ts';
import { settleAndCheck, type Violation } from './checks.ts';
import { treeCpuSeconds } from './cpu.ts';
import { type BuyerRecord, type HerdLoadResult, herdLoad } from './herd-load.ts';
import { printTimelines } from './herd-timeline.ts';
import { startLoad } from './load.ts';

/** What the phase needs of the bench that runs it (bench/orders.ts). */
export interface HerdContext {
  spawn(entry: 'api' | 'worker', env?: Record<string, string>): Promise<Spawned>;
  stop(child: Spawned): Promise<void>;
  createSale(url: string, productId: string, stock: number, shards: number): Promise<void>;
  rows(productId: string): Promise<number>;
  record(found: Violation[]): void;
  log(line: string): void;
  /** The private Redis (the answer-cost probe writes a waiting line into it). */
  redis: Redis;
}

export interface HerdResult {
  runs: HerdRun[];
  cost: AnswerCost;
}

export const HERD_TARGETS = {
  sellOut: 1.5,
  fairness: 0.95,
  p50Requests: 3,
  p99Requests: 10,
  p99Ms: 500,
  toldMs: 1000,
};
/** The first buyers by first-request time who should get the units: 5 % of slack. */
const FAIR_FACTOR = 1.05;
const VARIANTS = [
  { name: '3s', stockSeconds: 3, perUnit: 4, spreadMs: 3000 },
  { name: '1s', stockSeconds: 1, perUnit: 10, spreadMs: 1000 },
] as const;
const SHARDS = 8;
const CAPACITY_SECONDS = envNumber('BENCH_HERD_CAPACITY_SECONDS', 5);
const CONNECTIONS = envNumber('BENCH_HERD_CONNECTIONS', 400);
const GIVE_UP_MS = 60_000;

export interface HerdRun {
  variant: string;
  room: 'on' | 'off';
  capacity: number;
  stock: number;
  buyers: number;
  spreadMs: number;
  load: HerdLoadResult;
  /** First request to the last 202, ms. */
  sellOutMs: number;
  fairness: number;
  requests: Summary;
  latency: Summary;
  /** After the last unit sold: until every waiting buyer had its 409, and the worst from its poll being due. */
  allToldMs: number;
  toldAfterDueMs: number;
  fates: Record<string, number>;
  /** API CPU ms per answer during the run. */
  cpuMsPerAnswer: number;
  /** The API's admission limit, sampled twice a second during the run: the waiting room's pace. */
  admissionLimit: Summary;
  unsold: number;
  violations: number;
}

/** The figures of one run from its buyers. */
function figures(load: HerdLoadResult, stock: number) {
  const buyers = load.buyers;
  const byFirst = [...buyers].sort((a, b) => a.firstAt - b.firstAt);
  const early = byFirst.slice(0, Math.ceil(FAIR_FACTOR * stock));
  const got = (b: BuyerRecord) => b.fate === 'accepted';
  const first = byFirst[0]?.firstAt ?? 0;
  const lastSale = Math.max(first, ...buyers.filter(got).map((b) => b.doneAt));
  const told = buyers.filter((b) => b.fate === 'sold_out');
  const fates: Record<string, number> = {};
  for (const b of buyers) fates[b.fate] = (fates[b.fate] ?? 0) + 1;
  return {
    // Not sold out as far as the buyers know (some gave up first): no sell-out time, no news of it.
    sellOutMs: load.accepted < stock ? Number.NaN : lastSale - first,
    fairness: early.filter(got).length / stock,
    requests: summarize(buyers.map((b) => b.requests)),
    latency: summarize(load.latencies),
    allToldMs: told.length ? Math.max(0, ...told.map((b) => b.doneAt - lastSale)) : Number.NaN,
    toldAfterDueMs: told.length
      ? Math.max(0, ...told.map((b) => b.doneAt - Math.max(lastSale, b.lastSentAt)))
      : Number.NaN,
    fates,
  };
}

/** Samples the API's admission limit (flashsale_admission_limit) every 500 ms until stopped. */
function sampleLimit(url: string): { stop(): Promise<number[]> } {
  const samples: number[] = [];
  let stopped = false;
  const loop = (async () => {
    while (!stopped) {
      const text = await fetch(`${url}/metrics`)
        .then((r) => r.text())
        .catch(() => '');
      const m = /^flashsale_admission_limit(?:\{[^}]*\})? (\S+)$/m.exec(text);
      if (m) samples.push(Number(m[1]));
      await sleep(500);
    }
  })();
  return {
    async stop() {
      stopped = true;
      await loop;
      return samples;
    },
  };
}

/** Closed-model orders/s of `api` (as the overload phase's capacity), after the writer drained. */
async function capacity(ctx: HerdContext, api: Spawned): Promise<number> {
  const productId = `bench-herd-cap-${Date.now().toString(36)}`;
  await ctx.createSale(api.url, productId, 10_000_000, SHARDS);
  const load = await startLoad({
    targets: [{ url: api.url, path: '/api/orders' }],
    productId,
    userPrefix: 'herd-cap',
    connections: 100,
    seconds: CAPACITY_SECONDS,
    expectStatus: 202,
  }).done;
  await settle(ctx, api, 'herd-capacity', productId, load);
  return load.okPerSecond;
}

/** Waits for the writer, checks the invariants of the product's sale, records what failed. */
async function settle(
  ctx: HerdContext,
  api: Spawned,
  scenario: string,
  productId: string,
  load: { accepted: number; unknown: number },
) {
  const { settled, violations } = await settleAndCheck({
    scenario,
    url: api.url,
    productId,
    accepted: load.accepted,
    unknown: load.unknown,
    rows: ctx.rows,
  });
  ctx.record(violations);
  return { settled, violations };
}

async function run(
  ctx: HerdContext,
  api: Spawned,
  room: 'on' | 'off',
  variant: (typeof VARIANTS)[number],
  cap: number,
): Promise<HerdRun> {
  const stock = Math.max(1, Math.round(cap * variant.stockSeconds));
  const buyers = stock * variant.perUnit;
  const productId = `bench-herd-${variant.name}-${room}-${Date.now().toString(36)}`;
  await ctx.createSale(api.url, productId, stock, SHARDS);
  const cpuBefore = treeCpuSeconds(api.proc.pid);
  const limits = sampleLimit(api.url);
  const load = await herdLoad({
    url: api.url,
    productId,
    userPrefix: `herd-${variant.name}-${room}`,
    buyers,
    spreadMs: variant.spreadMs,
    giveUpMs: GIVE_UP_MS,
    connections: CONNECTIONS,
    timeoutMs: 15_000,
  });
  const cpu = treeCpuSeconds(api.proc.pid) - cpuBefore;
  const admissionLimit = summarize(await limits.stop());
  const { settled, violations } = await settle(ctx, api, `herd-${variant.name}-${room}`, productId, load);
  const f = figures(load, stock);
  return {
    variant: variant.name,
    room,
    capacity: cap,
    stock,
    buyers,
    spreadMs: variant.spreadMs,
    load,
    ...f,
    cpuMsPerAnswer: (cpu * 1000) / Math.max(1, load.latencies.length),
    admissionLimit,
    unsold: Number(settled.reconcile.available ?? Number.NaN),
    violations: violations.length,
  };
}

/** The phase: a writer, one API process per WAITING_ROOM setting, capacity, then each variant on and off. */
export async function herdPhase(ctx: HerdContext): Promise<HerdResult> {
  ctx.log('phase herd: capacity, then each variant with WAITING_ROOM=on and =off, back to back');
  const worker = await ctx.spawn('worker');
  const apis = {
    on: await ctx.spawn('api', { WAITING_ROOM: 'on' }),
    off: await ctx.spawn('api', { WAITING_ROOM: 'off' }),
  };
  const runs: HerdRun[] = [];
  try {
    // The measured API warms up on the capacity run; the other gets a short one of its own.
    const cap = await capacity(ctx, apis.off);
    await capacity(ctx, apis.on);
    ctx.log(`  capacity ${num(cap)} orders/s (WAITING_ROOM=off, closed model, ${CAPACITY_SECONDS} s)`);
    for (const variant of VARIANTS) {
      for (const room of ['on', 'off'] as const) {
        const t0 = performance.now();
        const r = await run(ctx, apis[room], room, variant, cap);
        runs.push(r);
        ctx.log(`  ${variant.name} ${room}: ${line(r)} (${((performance.now() - t0) / 1000).toFixed(0)} s)`);
      }
    }
    const on = apis.on;
    const cost = await answerCost(
      on,
      ctx.redis,
      (productId, stock) => ctx.createSale(on.url, productId, stock, 1),
      async (productId) => {
        await call(on.url, 'POST', '/api/orders', { productId, userId: 'cost-buyer', quantity: 1 });
      },
    );
    return { runs, cost };
  } finally {
    await ctx.stop(apis.off);
    await ctx.stop(apis.on);
    await ctx.stop(worker);
  }
}

function line(r: HerdRun): string {
  return `S ${r.stock} B ${r.buyers}  sell-out ${times(r.sellOutMs / ((r.stock / r.capacity) * 1000))}  fairness ${r.fairness.toFixed(3)}  requests/buyer p50 ${r.requests.p50} p99 ${r.requests.p99}  p99 ${ms(r.latency.p99)} ms  ${answersText(r)}`;
}

const answersText = (r: HerdRun) =>
  [...Object.entries(r.load.answers), ...Object.entries(r.load.errors)]
    .map(([k, n]) => `${k}:${n}`)
    .join(' ');

/** Prints the herd table and the targets (waiting room on); writes .bench/orders-herd.json. */
export function reportHerd({ runs, cost }: HerdResult): Check[] {
  printTable(
    'Herd (first requests spread over the window; latency from each request\'s send; "told" = a waiting buyer\'s 409 after the last unit sold)',
    [
      { header: 'variant', value: (r: HerdRun) => `${r.variant} room=${r.room}`, align: 'left' },
      { header: 'capacity/s', value: (r: HerdRun) => num(r.capacity) },
      { header: 'S', value: (r: HerdRun) => num(r.stock) },
      { header: 'B', value: (r: HerdRun) => num(r.buyers) },
      { header: 'sell-out s', value: (r: HerdRun) => num(r.sellOutMs / 1000, 2) },
      {
        header: 'sell-out/(S/cap)',
        value: (r: HerdRun) => times(r.sellOutMs / ((r.stock / r.capacity) * 1000)),
      },
      { header: 'fairness', value: (r: HerdRun) => r.fairness.toFixed(3) },
      { header: 'req/buyer p50', value: (r: HerdRun) => num(r.requests.p50) },
      { header: 'p99', value: (r: HerdRun) => num(r.requests.p99) },
      { header: 'p99 ms', value: (r: HerdRun) => ms(r.latency.p99) },
      { header: 'max ms', value: (r: HerdRun) => ms(r.latency.max) },
      { header: 'all told ms', value: (r: HerdRun) => ms(r.allToldMs) },
      { header: 'told after due ms', value: (r: HerdRun) => ms(r.toldAfterDueMs) },
      { header: 'API CPU ms/answer', value: (r: HerdRun) => r.cpuMsPerAnswer.toFixed(3) },
      {
        header: 'queued CPU s (of sell-out)',
        value: (r: HerdRun) => {
          const s = ((r.load.answers['429 queued'] ?? 0) * cost.queued) / 1e6;
          return `${s.toFixed(2)} (${num((100 * s * 1000) / r.sellOutMs)} %)`;
        },
      },
      {
        header: 'admission limit min/p50',
        value: (r: HerdRun) => `${num(r.admissionLimit.min)}/${num(r.admissionLimit.p50)}`,
      },
      { header: 'answers', value: answersText, align: 'left' },
      {
        header: 'fates',
        value: (r: HerdRun) =>
          Object.entries(r.fates)
            .map(([k, n]) => `${k}:${n}`)
            .join(' '),
        align: 'left',
      },
      { header: 'unsold', value: (r: HerdRun) => num(r.unsold) },
      { header: 'invariants', value: (r: HerdRun) => (r.violations ? `${r.violations} BROKEN` : 'ok') },
    ],
    runs,
  );
  printTable(
    `API CPU per answer (closed model on the WAITING_ROOM=on process, median of ${cost.rounds} interleaved rounds)`,
    [
      { header: 'answer', value: (row: [string, number]) => row[0], align: 'left' },
      { header: 'µs', value: (row: [string, number]) => num(row[1]) },
      { header: '÷ bare 202', value: (row: [string, number]) => times(row[1] / cost.bare) },
    ],
    [
      ['POST /bench/bare 202 (validation, no Redis)', cost.bare],
      ['429 queued', cost.queued],
      ['409 sold_out', cost.soldOut],
    ] as [string, number][],
  );
  printTimelines(runs);
  const checks = runs.filter((r) => r.room === 'on').flatMap(targetChecks);
  printChecks('Herd targets with the waiting room (issue 24)', checks);
  writeJson('orders-herd', {
    environment: environment(),
    targets: HERD_TARGETS,
    answerCostMicros: cost,
    runs: runs.map(({ load, ...r }) => ({
      ...r,
      answers: load.answers,
      timeline: load.timeline,
      errors: load.errors,
      maxSendLagMs: load.maxSendLagMs,
      latencyP999Ms: percentile(Float64Array.from(load.latencies).sort(), 99.9),
    })),
    checks,
  });
  return checks;
}

function targetChecks(r: HerdRun): Check[] {
  const at = `${r.variant}`;
  const t = HERD_TARGETS;
  const sellOut = r.sellOutMs / ((r.stock / r.capacity) * 1000);
  return [
    {
      name: `${at}: sell-out <= ${t.sellOut} x S/capacity`,
      pass: sellOut <= t.sellOut,
      detail: times(sellOut),
    },
    {
      name: `${at}: fairness >= ${t.fairness}`,
      pass: r.fairness >= t.fairness,
      detail: r.fairness.toFixed(3),
    },
    {
      name: `${at}: requests per buyer p50 <= ${t.p50Requests}, p99 <= ${t.p99Requests}`,
      pass: r.requests.p50 <= t.p50Requests && r.requests.p99 <= t.p99Requests,
      detail: `${r.requests.p50} / ${r.requests.p99}`,
    },
    {
      name: `${at}: p99 of every answer <= ${t.p99Ms} ms`,
      pass: r.latency.p99 <= t.p99Ms,
      detail: `${ms(r.latency.p99)} ms`,
    },
    {
      name: `${at}: every waiting buyer told sold out <= ${t.toldMs} ms after its poll was due`,
      pass: r.toldAfterDueMs <= t.toldMs,
      detail: `${ms(r.toldAfterDueMs)} ms`,
    },
    {
      name: `${at}: invariants (0 oversold, every 202 one row, no refusal a row)`,
      pass: r.violations === 0,
      detail: String(r.violations),
    },
    { name: `${at}: every unit sold`, pass: r.unsold === 0, detail: `${num(r.unsold)} unsold` },
  ];
}
