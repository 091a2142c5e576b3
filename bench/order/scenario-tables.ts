// The order bench's tables of every closed-model scenario that ran: rates and latency, the writer,
// Redis work per answer, CPU by process, and a CPU model of what a quiet machine would do.
import os from 'node:os';
import { type Column, ms, num, printTable, times } from '../lib/table.ts';
import { GENERATOR } from './cpu.ts';
import type { BenchOptions } from './options.ts';
import type { ScenarioResult as R } from './scenario.ts';
import { statusText } from './service-metrics.ts';

const key: Column<R> = { header: 'scenario', value: (r) => r.key, align: 'left' };
const perAnswer = (r: R, cores: number) => (cores * r.redis.wallSeconds * 1e6) / Math.max(1, r.redis.answers);
/** Cores of our own processes (all but the machine's totals). */
const ours = (r: R) =>
  Object.entries(r.cores)
    .filter(([k]) => k !== 'machine' && k !== 'irq+steal')
    .reduce((a, [, v]) => a + (Number.isFinite(v) ? v : 0), 0);
const otherCores = (r: R) =>
  Math.max(0, (r.cores.machine ?? Number.NaN) - (r.cores['irq+steal'] ?? 0) - ours(r));

function printRates(results: R[], o: BenchOptions): void {
  const others = (r: R) => {
    const parts = [statusText(r.statuses, r.expectStatus)];
    if (r.errors) parts.push(`conn errors ${r.errors}`);
    if (r.timeouts) parts.push(`timeouts ${r.timeouts}`);
    return parts.filter(Boolean).join(' ') || '0';
  };
  printTable(
    `Order path, ${o.seconds} s per scenario (c8s*/c8rs* ${o.reshard.seconds} s), ${o.connections} connections, pipelining 1 (d counts 409 sold_out answers)`,
    [
      key,
      { header: 'what', value: (r) => r.label, align: 'left' },
      { header: 'procs', value: (r) => String(r.processes) },
      { header: 'orders/s', value: (r) => num(r.perSecond) },
      { header: 'p50 ms', value: (r) => ms(r.latency.p50) },
      { header: 'p99 ms', value: (r) => ms(r.latency.p99) },
      { header: 'errors/non-expected', value: others, align: 'left' },
      { header: 'accepted', value: (r) => num(r.accepted) },
      // CPU per answer is far less disturbed by other load on the machine than answers/s.
      {
        header: 'API CPU µs/answer',
        value: (r) => num(perAnswer(r, (r.cores.api ?? 0) || (r.cores['api+writer'] ?? 0))),
      },
      { header: 'load1', value: (r) => `${r.loadavg.before.toFixed(1)}>${r.loadavg.after.toFixed(1)}` },
    ],
    results,
  );
}

function printWriter(results: R[]): void {
  printTable(
    'Writer (Postgres rows) during and after each run that enqueues',
    [
      key,
      { header: 'accepted/s', value: (r) => num(r.writer?.acceptedPerSecond) },
      { header: 'rows/s during', value: (r) => num(r.writer?.rowsPerSecond) },
      { header: 'writer/accepted', value: (r) => times(r.writer?.ratio) },
      { header: 'backlog at end', value: (r) => num(r.writer?.backlogAtEnd) },
      { header: 'rows/s draining', value: (r) => num(r.writer?.drainRowsPerSecond) },
      { header: 'drained after', value: (r) => `${ms(r.writer?.drainMs)} ms` },
    ],
    results.filter((r) => r.writer),
  );
}

function printRedis(results: R[]): void {
  const per = (r: R, ...cmds: string[]) =>
    num(cmds.reduce((a, c) => a + (r.redis.calls[c] ?? 0), 0) / r.redis.answers, 2);
  printTable(
    'Redis during each load (all clients, window + tail), per answered request',
    [
      key,
      {
        header: 'redis CPU',
        value: (r) => `${((r.redis.cpuSeconds / r.redis.wallSeconds) * 100).toFixed(0)}%`,
      },
      { header: 'commands', value: (r) => per(r, ...Object.keys(r.redis.calls)) },
      { header: 'evalsha', value: (r) => per(r, 'evalsha', 'eval') },
      { header: 'publish', value: (r) => per(r, 'publish') },
      { header: 'zadd (BullMQ ~3 + lock waits)', value: (r) => per(r, 'zadd') },
      { header: '(un)subscribe', value: (r) => per(r, 'subscribe', 'unsubscribe') },
      { header: 'lock hand-offs/order', value: (r) => (r.lock ? num(r.lock.handoffsPerOrder, 3) : '') },
      { header: 'mean lock wait ms', value: (r) => (r.lock ? ms(r.lock.meanWaitMs) : '') },
    ],
    results,
  );
}

function printCpu(results: R[]): void {
  const cpus = os.cpus().length;
  const cores = (role: string): Column<R> => ({
    header: role === GENERATOR ? 'autocannon' : role,
    value: (r) => {
      const v = r.cores[role];
      return v === undefined || Number.isNaN(v) ? '-' : v.toFixed(2);
    },
  });
  const roles = [GENERATOR, 'api', 'api+writer', 'writer', 'redis', 'postgres', 'irq+steal', 'machine'];
  printTable(
    `CPU during each load, in cores (this machine has ${cpus}); "others" = processes not ours`,
    [key, ...roles.map(cores), { header: 'others', value: (r) => otherCores(r).toFixed(2) }],
    results,
  );
  const others = results.map(otherCores);
  const disturbed = results.filter((_, i) => (others[i] ?? 0) > 0.25).map((r) => r.key);
  console.log(
    disturbed.length > 0
      ? `WARNING: other processes on this machine used up to ${Math.max(...others).toFixed(2)} of ${cpus} cores during ${disturbed.join(', ')}: those numbers are disturbed; compare ratios only between runs with a quiet machine.`
      : 'The machine was otherwise quiet during every load (other processes < 0.25 cores).',
  );
}

/**
 * A CPU model of a quiet machine: what a scenario costs in CPU per answer, summed over our
 * processes, and the throughput the machine's cores (and each single-threaded process's one core)
 * would allow. It ignores latency-bound effects (lock waits), so it says nothing about c1x2/c8x2.
 */
export function cpuModel(r: R): { total: number; api: number; estimate: number } {
  const us = (role: string) => perAnswer(r, r.cores[role] ?? 0);
  const total = perAnswer(r, ours(r));
  const api = us('api') + us('api+writer');
  const limits = [
    (os.cpus().length * 1e6) / total,
    (r.processes * 1e6) / api,
    1e6 / us(GENERATOR),
    1e6 / us('redis'),
    1e6 / us('writer'),
  ].filter((v) => Number.isFinite(v) && v > 0);
  return { total, api, estimate: Math.min(...limits) };
}

function printModel(results: R[]): void {
  printTable(
    `CPU per answer (all our processes: autocannon, API, writer, Redis, Postgres) and a ${os.cpus().length}-core quiet-machine estimate`,
    [
      key,
      { header: 'our CPU µs/answer', value: (r) => num(cpuModel(r).total) },
      { header: 'API µs/answer', value: (r) => num(cpuModel(r).api) },
      { header: 'estimate /s', value: (r) => num(cpuModel(r).estimate) },
      { header: 'measured /s', value: (r) => num(r.perSecond) },
    ],
    results,
  );
}

/** Every table of the scenarios, then their notes. */
export function printScenarioTables(results: R[], o: BenchOptions): void {
  printRates(results, o);
  printWriter(results);
  printRedis(results);
  printCpu(results);
  printModel(results);
  for (const r of results.filter((x) => x.notes.length > 0))
    console.log(`note [${r.key}]: ${r.notes.join('; ')}`);
}

/** The scenarios as .bench/orders.json keeps them: latency as a few percentiles in ms. */
export function scenariosJson(results: R[]) {
  return results.map(({ latency, ...r }) => ({
    ...r,
    latencyMs: {
      p50: latency.p50,
      p90: latency.p90,
      p99: latency.p99,
      max: latency.max,
      count: latency.count,
    },
  }));
}
