// The overload phase's figures and report: for each API_WORKERS setting, the capacity (closed model)
// and open-model runs at multiples of it, judged against the targets at 4x: p99 of all answers
// <= 1 s, no resets or timeouts, every 429/503 with Retry-After, goodput >= 0.5 x capacity; and the
// refusal-to-order CPU ratio r with the bound (1 - f r) / (1 - r) it sets on goodput at f x capacity.
import { type Summary, summarize } from '../lib/stats.ts';
import { type Check, ms, num, printChecks, printTable, times } from '../lib/table.ts';
import { GENERATOR } from './cpu.ts';
import { printReported } from './judge.ts';
import type { OpenLoadResult } from './open-load.ts';

export const OVERLOAD_TARGETS = { factor: 4, p99Ms: 1000, goodput: 0.5 };

export interface OverloadRun {
  workers: number;
  factor: number;
  capacity: number;
  load: OpenLoadResult;
  latency: Summary;
  /** 202s a second over the run: from the first scheduled send to the last answer (at least the window). */
  goodput: number;
  /** Invariant violations found after the run (drain, rows == accepted, reconcile). */
  violations: number;
  /** Cores used during the run, by role (bench/order/cpu.ts coresUsed): the load generator is this process. */
  cores: Record<string, number>;
  /**
   * r: the API CPU of a refusal over that of an accepted order. An order's is the capacity run's (CPU
   * per 202, closed model); a refusal's is what the run's API CPU leaves over its 202s, per refusal.
   */
  refusalRatio: number;
  /** The goodput (x capacity) r allows at `factor` x capacity: g + (f - g) r <= 1. */
  goodputBound: number;
}

/** The API's CPU: seconds per order of the capacity run, and seconds over the whole overload run. */
export interface ApiCpu {
  perOrder: number;
  run: number;
}

/** r and its bound on goodput (NaN when the run refused nothing or the CPU was not measured). */
function refusalCost(load: OpenLoadResult, factor: number, cpu: ApiCpu): { r: number; bound: number } {
  const perRefusal = (cpu.run - cpu.perOrder * load.accepted) / load.refused;
  const r = load.refused > 0 && cpu.perOrder > 0 ? perRefusal / cpu.perOrder : Number.NaN;
  return { r, bound: (1 - factor * r) / (1 - r) };
}

export function overloadRun(
  workers: number,
  factor: number,
  capacity: number,
  load: OpenLoadResult,
  violations: number,
  cores: Record<string, number>,
  cpu: ApiCpu,
): OverloadRun {
  const seconds = Math.max(load.seconds, load.spanMs / 1000);
  const { r, bound } = refusalCost(load, factor, cpu);
  return {
    workers,
    factor,
    capacity,
    load,
    latency: summarize(load.latencies),
    goodput: load.accepted / seconds,
    violations,
    cores,
    refusalRatio: r,
    goodputBound: bound,
  };
}

const failures = (r: OverloadRun) =>
  Object.values(r.load.errors).reduce((a, b) => a + b, 0) + r.load.timeouts + r.load.unknown;

export function overloadLine(r: OverloadRun): string {
  const statuses = Object.entries(r.load.statuses)
    .map(([s, n]) => `${s}:${n}`)
    .join(' ');
  return `  ${`w${r.workers} ${r.factor}x`.padEnd(6)} offered ${num(r.load.rate)}/s  p50 ${ms(r.latency.p50)} ms  p99 ${ms(r.latency.p99)} ms  goodput ${num(r.goodput)}/s  r ${r.refusalRatio.toFixed(2)} (bound ${times(r.goodputBound)})  ${statuses}  failures ${failures(r)}${r.violations ? `  ${r.violations} VIOLATION(S)` : '  invariants ok'}`;
}

function printRuns(runs: OverloadRun[]): void {
  printTable(
    'Overload (open model: latency from each order\'s scheduled send; "failures" = resets, timeouts, unanswered)',
    [
      { header: 'API_WORKERS', value: (r: OverloadRun) => String(r.workers) },
      { header: 'offered', value: (r: OverloadRun) => `${r.factor}x ${num(r.load.rate)}/s`, align: 'left' },
      { header: 'capacity/s', value: (r: OverloadRun) => num(r.capacity) },
      { header: 'sent', value: (r: OverloadRun) => num(r.load.sent) },
      { header: 'p50 ms', value: (r: OverloadRun) => ms(r.latency.p50) },
      { header: 'p99 ms', value: (r: OverloadRun) => ms(r.latency.p99) },
      { header: 'max ms', value: (r: OverloadRun) => ms(r.latency.max) },
      {
        header: 'statuses',
        value: (r: OverloadRun) =>
          Object.entries(r.load.statuses)
            .map(([s, n]) => `${s}:${n}`)
            .join(' '),
        align: 'left',
      },
      {
        header: 'resets/timeouts',
        value: (r: OverloadRun) =>
          [...Object.entries(r.load.errors).map(([c, n]) => `${c}:${n}`), `timeouts:${r.load.timeouts}`].join(
            ' ',
          ),
        align: 'left',
      },
      {
        header: '429/503 w/o Retry-After',
        value: (r: OverloadRun) => `${r.load.refusedWithoutRetryAfter} of ${r.load.refused}`,
      },
      { header: 'goodput 202/s', value: (r: OverloadRun) => num(r.goodput) },
      { header: 'goodput/capacity', value: (r: OverloadRun) => times(r.goodput / r.capacity) },
      // What refusing costs: r = refusal CPU / order CPU, and the goodput (x capacity) it leaves room for.
      { header: 'r', value: (r: OverloadRun) => r.refusalRatio.toFixed(2) },
      { header: '(1-fr)/(1-r)', value: (r: OverloadRun) => times(r.goodputBound) },
      { header: 'sender lag ms', value: (r: OverloadRun) => ms(r.load.maxSendLagMs) },
      // On one shared machine the generator's own CPU is taken from the service: say how much.
      { header: 'generator cores', value: (r: OverloadRun) => (r.cores[GENERATOR] ?? Number.NaN).toFixed(2) },
      { header: 'machine cores', value: (r: OverloadRun) => (r.cores.machine ?? Number.NaN).toFixed(2) },
      { header: 'invariants', value: (r: OverloadRun) => (r.violations ? `${r.violations} BROKEN` : 'ok') },
    ],
    runs,
  );
}

/** The targets of one run at the target factor. */
function targetChecks(r: OverloadRun): Check[] {
  const at = `API_WORKERS=${r.workers}, ${r.factor}x`;
  return [
    {
      name: `${at}: p99 <= ${OVERLOAD_TARGETS.p99Ms} ms`,
      pass: r.latency.p99 <= OVERLOAD_TARGETS.p99Ms,
      detail: `${ms(r.latency.p99)} ms`,
    },
    { name: `${at}: 0 resets/timeouts`, pass: failures(r) === 0, detail: String(failures(r)) },
    {
      name: `${at}: every 429/503 carries Retry-After`,
      pass: r.load.refusedWithoutRetryAfter === 0,
      detail: `${r.load.refusedWithoutRetryAfter} of ${r.load.refused} without`,
    },
    {
      name: `${at}: goodput >= ${OVERLOAD_TARGETS.goodput} x capacity`,
      pass: r.goodput >= OVERLOAD_TARGETS.goodput * r.capacity,
      detail: `${times(r.goodput / r.capacity)}  ${num(r.goodput)} / ${num(r.capacity)}`,
    },
    { name: `${at}: invariants after the run`, pass: r.violations === 0, detail: String(r.violations) },
  ];
}

/** API_WORKERS=2 against 1: capacity and goodput at the target factor. */
function reported(runs: OverloadRun[]): Check[] {
  const at = (workers: number, factor: number) =>
    runs.find((r) => r.workers === workers && r.factor === factor);
  const capacity = (workers: number) => runs.find((r) => r.workers === workers)?.capacity ?? Number.NaN;
  const goodput4 = (workers: number) => at(workers, OVERLOAD_TARGETS.factor)?.goodput ?? Number.NaN;
  return [
    {
      name: 'capacity, API_WORKERS=2 / 1',
      pass: true,
      detail: `${times(capacity(2) / capacity(1))}  ${num(capacity(2))} / ${num(capacity(1))} orders/s`,
    },
    {
      name: `goodput at ${OVERLOAD_TARGETS.factor}x, API_WORKERS=2 / 1`,
      pass: true,
      detail: `${times(goodput4(2) / goodput4(1))}  ${num(goodput4(2))} / ${num(goodput4(1))} 202/s`,
    },
  ];
}

/** Prints the overload tables; returns the target checks and the reported comparisons. */
export function reportOverload(runs: OverloadRun[]): { checks: Check[]; reported: Check[] } {
  printRuns(runs);
  const checks = runs.filter((r) => r.factor === OVERLOAD_TARGETS.factor).flatMap(targetChecks);
  printChecks(`Overload targets at ${OVERLOAD_TARGETS.factor}x capacity`, checks);
  const rows = reported(runs);
  printReported('Overload, reported (no target)', rows);
  return { checks, reported: rows };
}
