// The bench's herd phase (BENCH_ONLY=herd): a sale whose buyers outnumber what the service can serve,
// with streaming buyers, polling buyers (WAITING_ROOM=on) and WAITING_ROOM=off back to back.
//   3s     stock S = 3 s of measured capacity, B = 4 x S buyers, first requests spread over 3 s
//   1s     S = 1 s of capacity, B = 10 x S within 1 s
// S is capped so that B connections fit under the open-file limit, and the spread stretched so that
// no more than 2,000 new connections a second arrive (each buyer has a connection of its own).
// Printed for each: sell-out time / (S / capacity), fairness (share of the S units that went to the
// first 1.05 x S buyers by first-request time), requests per buyer, p99 of every answer from its send
// (a stream's: to its first event), how long after the sell-out every buyer knew, listen-queue
// overflows, and the invariants.
import { readFile } from 'node:fs/promises';
import { performance } from 'node:perf_hooks';
import type { Redis } from 'ioredis';
import { call, type Spawned } from '../../harness/service.ts';
import { sampleEvery } from '../lib/sampler.ts';
import { summarize } from '../lib/stats.ts';
import { num } from '../lib/table.ts';
import { answerCost } from './answer-cost.ts';
import { settleAndCheck, type Violation } from './checks.ts';
import { treeCpuSeconds } from './cpu.ts';
import { type BuyerRecord, type HerdLoadResult, herdLoad } from './herd-load.ts';
import { type HerdMode, type HerdResult, type HerdRun, line, MODES } from './herd-report.ts';
import { startLoad } from './load.ts';
import type { HerdOptions } from './options.ts';

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
  options: { herd: HerdOptions };
}

/** The first buyers by first-request time who should get the units: 5 % of slack. */
const FAIR_FACTOR = 1.05;
const VARIANTS = [
  { name: '3s', stockSeconds: 3, perUnit: 4, spreadMs: 3000 },
  { name: '1s', stockSeconds: 1, perUnit: 10, spreadMs: 1000 },
] as const;
const SHARDS = 8;
const GIVE_UP_MS = 60_000;
/** Buyers each hold a connection (a file on both sides): at most this many, under 20,000 open files. */
const MAX_BUYERS = 12_000;
/** Faster herds measure the machine (the load generator shares its cores), not the service. */
const MAX_NEW_CONNECTIONS_PER_S = 2000;

/** The kernel's count of connections dropped because a listen queue was full (/proc/net/netstat). */
async function listenOverflows(): Promise<number> {
  const text = await readFile('/proc/net/netstat', 'utf8').catch(() => '');
  const [names, values] = text.split('\n').filter((l) => l.startsWith('TcpExt:'));
  const i = names?.split(' ').indexOf('ListenOverflows') ?? -1;
  return i < 0 ? Number.NaN : Number(values?.split(' ')[i]);
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
  return sampleEvery(500, async () => {
    const text = await fetch(`${url}/metrics`)
      .then((r) => r.text())
      .catch(() => '');
    const m = /^flashsale_admission_limit(?:\{[^}]*\})? (\S+)$/m.exec(text);
    return m ? Number(m[1]) : undefined;
  });
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
    seconds: ctx.options.herd.capacitySeconds,
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
  mode: HerdMode,
  variant: (typeof VARIANTS)[number],
  cap: number,
): Promise<HerdRun> {
  const stock = Math.max(1, Math.min(Math.round(cap * variant.stockSeconds), MAX_BUYERS / variant.perUnit));
  const buyers = stock * variant.perUnit;
  const spreadMs = Math.max(variant.spreadMs, (buyers / MAX_NEW_CONNECTIONS_PER_S) * 1000);
  const scenario = `herd-${variant.name}-${mode}`;
  const productId = `bench-${scenario}-${Date.now().toString(36)}`;
  await ctx.createSale(api.url, productId, stock, SHARDS);
  const cpuBefore = treeCpuSeconds(api.proc.pid);
  const overflowsBefore = await listenOverflows();
  const limits = sampleLimit(api.url);
  const load = await herdLoad({
    url: api.url,
    productId,
    userPrefix: scenario,
    buyers,
    spreadMs,
    giveUpMs: GIVE_UP_MS,
    connections: buyers,
    timeoutMs: GIVE_UP_MS,
    stream: mode === 'stream',
  });
  const cpu = treeCpuSeconds(api.proc.pid) - cpuBefore;
  const listenOverflowsDuring = (await listenOverflows()) - overflowsBefore;
  const admissionLimit = summarize(await limits.stop());
  const { settled, violations } = await settle(ctx, api, scenario, productId, load);
  return {
    variant: variant.name,
    mode,
    capacity: cap,
    stock,
    buyers,
    spreadMs,
    load,
    ...figures(load, stock),
    cpuMsPerBuyer: (cpu * 1000) / buyers,
    listenOverflows: listenOverflowsDuring,
    admissionLimit,
    unsold: Number(settled.reconcile.available ?? Number.NaN),
    violations: violations.length,
  };
}

/** The phase: a writer, one API process per WAITING_ROOM setting, capacity, then each variant on and off. */
export async function runHerd(ctx: HerdContext): Promise<HerdResult> {
  ctx.log(
    'phase herd: capacity, then each variant with streaming buyers, polling buyers and WAITING_ROOM=off',
  );
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
    ctx.log(
      `  capacity ${num(cap)} orders/s (WAITING_ROOM=off, closed model, ${ctx.options.herd.capacitySeconds} s)`,
    );
    for (const variant of VARIANTS) {
      for (const mode of MODES) {
        const t0 = performance.now();
        const r = await run(ctx, mode === 'off' ? apis.off : apis.on, mode, variant, cap);
        runs.push(r);
        ctx.log(`  ${variant.name} ${mode}: ${line(r)} (${((performance.now() - t0) / 1000).toFixed(0)} s)`);
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
