// One closed-model scenario of the order bench: autocannon against the API(s) for a window, with
// Redis, CPU and lock figures taken around it and the invariants checked after; returns its result.
import os from 'node:os';
import { type CommandCounts, commandStats, diffCommandStats, serverCpuSeconds } from '../lib/redis-info.ts';
import { type Summary, summarize } from '../lib/stats.ts';
import { ms, num, times } from '../lib/table.ts';
import type { BenchRun } from './bench-run.ts';
import {
  checkReservationsOnly,
  sampleWriter,
  settleAndCheck,
  type Violation,
  type WriterStats,
  writerStats,
} from './checks.ts';
import { type CpuSnapshot, coresUsed } from './cpu.ts';
import { type LoadResult, type RunningLoad, startLoad } from './load.ts';
import { type LockCounters, lockCounters, lockFigures, statusText } from './service-metrics.ts';

export interface ScenarioSpec {
  key: string;
  label: string;
  urls: string[];
  path: string;
  productId: string;
  shards: number | null;
  expectStatus: number;
  /** rows: drain + rows/reconcile checks; reservations: Redis-only checks; none: no side effects. */
  check: 'rows' | 'reservations' | 'none';
  /** The window, when not BENCH_SECONDS. */
  seconds?: number;
  /** Accepted before this load (sell-out of d) that the checks must count. */
  acceptedBefore?: number;
  /** No progress line (warm-ups). */
  quiet?: boolean;
  /** Record every order's (sent, answered, status): handed to `inspect`. */
  timeline?: boolean;
  /** Started together with the load and awaited after it, before the checks (e.g. an admin loop). */
  during?: (load: RunningLoad) => Promise<void>;
  /** Sees the raw load result before the checks. */
  inspect?: (r: LoadResult) => void;
}

export interface ScenarioResult {
  key: string;
  label: string;
  path: string;
  processes: number;
  shards: number | null;
  expectStatus: number;
  perSecond: number;
  latency: Summary;
  accepted: number;
  statuses: Record<string, number>;
  unexpected: number;
  errors: number;
  timeouts: number;
  unknown: number;
  writer?: WriterStats;
  loadavg: { before: number; after: number };
  /** Redis server work during the load (window + tail), all clients: commands and CPU seconds. */
  redis: { calls: CommandCounts; cpuSeconds: number; wallSeconds: number; answers: number };
  /** Cores used during the load (window + tail) by role, Redis, Postgres and the whole machine. */
  cores: Record<string, number>;
  /** Shard-lock hand-offs and mean lock wait (service metrics), for the real path. */
  lock?: { handoffsPerOrder: number; meanWaitMs: number };
  notes: string[];
  /** orders/s of every round, when the scenario was repeated (this result is the median round). */
  rounds?: number[];
}

/** What is read before the load and again after it. */
interface Reading {
  loadavg: number;
  calls: CommandCounts;
  redisCpu: number;
  cpu: CpuSnapshot;
  lock?: LockCounters;
}

async function read(run: BenchRun, s: ScenarioSpec, postgres: number[]): Promise<Reading> {
  const [calls, redisCpu] = await Promise.all([commandStats(run.redis), serverCpuSeconds(run.redis)]);
  const lock = s.path === '/api/orders' ? await lockCounters(s.urls) : undefined;
  return { loadavg: os.loadavg()[0] ?? 0, calls, redisCpu, cpu: run.snapshot(postgres), lock };
}

/** The load with its `during` beside it; both have ended when this returns. */
async function load(run: BenchRun, s: ScenarioSpec) {
  const o = run.options;
  const load = startLoad({
    targets: s.urls.map((url) => ({ url, path: s.path })),
    productId: s.productId,
    userPrefix: s.key,
    connections: o.connections,
    seconds: s.seconds ?? o.seconds,
    expectStatus: s.expectStatus,
    timeline: s.timeline,
  });
  const sampler =
    s.check === 'rows' ? sampleWriter(s.productId, () => load.progress.accepted, run.infra.rows) : undefined;
  const beside = s.during?.(load);
  try {
    const r = await load.done;
    // A change still running (e.g. a reshard that overran the window) must end before the checks.
    await beside;
    return { load, r, sampler };
  } catch (err) {
    await sampler?.stop();
    await beside?.catch(() => {});
    throw err;
  }
}

/** The invariants after the load (DESIGN.md §5), and the writer's figures when it writes rows. */
async function check(
  run: BenchRun,
  s: ScenarioSpec,
  done: Awaited<ReturnType<typeof load>>,
  accepted: number,
): Promise<{ found: Violation[]; writer?: WriterStats }> {
  const { r, sampler } = done;
  const found: Violation[] = [];
  if (Object.keys(r.statuses).some((code) => Number(code) >= 500))
    found.push({ scenario: s.key, check: 'no 5xx', detail: statusText(r.statuses, 0) });
  const common = { scenario: s.key, productId: s.productId, accepted, unknown: r.unknown };
  if (s.check === 'reservations')
    found.push(...(await checkReservationsOnly({ ...common, redis: run.redis })));
  if (s.check !== 'rows') return { found };
  const url = s.urls[0] as string;
  const settled = await settleAndCheck({ ...common, url, rows: run.infra.rows });
  found.push(...settled.violations);
  const samples = (await sampler?.stop()) ?? [];
  return { found, writer: writerStats(samples, done.load.startedAt, done.load.deadline, accepted) };
}

function resultOf(s: ScenarioSpec, r: LoadResult, before: Reading, after: Reading, wallSeconds: number) {
  const redisCpu = after.redisCpu - before.redisCpu;
  return {
    key: s.key,
    label: s.label,
    path: s.path,
    processes: s.urls.length,
    shards: s.shards,
    expectStatus: s.expectStatus,
    perSecond: r.okPerSecond,
    latency: summarize(r.latencies),
    accepted: r.accepted + (s.acceptedBefore ?? 0),
    statuses: r.statuses,
    unexpected: r.unexpected,
    errors: r.errors,
    timeouts: r.timeouts,
    unknown: r.unknown,
    loadavg: { before: before.loadavg, after: after.loadavg },
    redis: {
      calls: diffCommandStats(before.calls, after.calls, ['info']),
      cpuSeconds: redisCpu,
      wallSeconds,
      answers: r.realAnswered,
    },
    cores: { ...coresUsed(before.cpu, after.cpu), redis: redisCpu / wallSeconds },
    lock: before.lock && after.lock ? lockFigures(before.lock, after.lock, r.accepted) : undefined,
    notes: r.unknown > 0 ? [`${r.unknown} orders sent without an answer`] : [],
  };
}

function progressLine(result: ScenarioResult, found: Violation[]): string {
  const w = result.writer;
  const writer = w
    ? `; writer ${num(w.rowsPerSecond)} rows/s (${times(w.ratio)}), drained ${ms(w.drainMs)} ms after`
    : '';
  const other = statusText(result.statuses, result.expectStatus) || 'no other statuses';
  const verdict = found.length ? `  ${found.length} VIOLATION(S)` : '  invariants ok';
  return `  ${result.key.padEnd(6)} ${num(result.perSecond).padStart(7)}/s  p50 ${ms(result.latency.p50)} ms  p99 ${ms(result.latency.p99)} ms  ${other}${writer}${verdict}`;
}

/** Runs one scenario, records its violations with the run and returns its figures. */
export async function runScenario(run: BenchRun, s: ScenarioSpec): Promise<ScenarioResult> {
  const postgres = await run.postgresPids();
  const before = await read(run, s, postgres);
  const done = await load(run, s);
  s.inspect?.(done.r);
  const wallSeconds = (performance.now() - done.load.startedAt) / 1000;
  const after = await read(run, s, postgres);
  const result: ScenarioResult = resultOf(s, done.r, before, after, wallSeconds);
  const { found, writer } = await check(run, s, done, result.accepted);
  result.writer = writer;
  if (!s.quiet) run.log(progressLine(result, found));
  run.record(found);
  return result;
}
