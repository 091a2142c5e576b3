// The order bench's one runner: picks the phases of the table (bench/orders.ts) that BENCH_ONLY or
// BENCH_PROFILE select, runs them on one private infrastructure, and makes the one report of them.
import { writeFileSync } from 'node:fs';
import os from 'node:os';
import { startInfra } from '../../harness/service.ts';
import { environment, writeJson } from '../lib/output.ts';
import { barChartSvg } from '../lib/svg.ts';
import { BenchRun } from './bench-run.ts';
import type { Violation } from './checks.ts';
import type { BenchOptions } from './options.ts';
import type { Phase, PhaseReport } from './phase.ts';
import type { ScenarioResult } from './scenario.ts';
import { printScenarioTables, scenariosJson } from './scenario-tables.ts';

/** The phases a run takes: BENCH_PROFILE=1's, BENCH_ONLY's, or every one of the full run. */
export function selectPhases(phases: Phase[], o: BenchOptions): Phase[] {
  const only = o.profile ? 'profile' : o.only;
  if (only === undefined) return phases.filter((p) => p.inFullRun);
  const phase = phases.find((p) => p.name === only);
  if (!phase) throw new Error(`BENCH_ONLY=${only}: no such phase (${phases.map((p) => p.name).join(', ')})`);
  return [phase];
}

function printMachine(o: BenchOptions): void {
  const cpus = os.cpus().length;
  const load = os
    .loadavg()
    .map((l) => l.toFixed(2))
    .join(' ');
  const topology =
    o.topology === 'split'
      ? 'API process(es) + a separate writer process'
      : 'one `main` process (API + writer)';
  console.log(
    `Machine: ${cpus} cores (${os.cpus()[0]?.model ?? 'unknown'}), load average ${load}.\n` +
      `autocannon (this process), the API process(es), the writer, redis-server and Postgres all share these ${cpus} cores:\n` +
      'the numbers are what this machine does with all of them competing, not the ceiling of any one component.\n' +
      `Topology: ${topology}; services run under tsx.`,
  );
}

/** .bench/orders.json and .bench/orders.svg, when a phase that ran gives them sections. */
function writeFiles(
  o: BenchOptions,
  scenarios: ScenarioResult[],
  reports: PhaseReport[],
  violations: Violation[],
  t0: number,
): void {
  const sections = reports.filter((r) => r.json);
  if (sections.length === 0) return;
  const file = writeJson('orders', {
    environment: environment({
      loadavgAtEnd: os.loadavg(),
      topology: o.topology,
      seconds: o.seconds,
      connections: o.connections,
    }),
    scenarios: scenariosJson(scenarios),
    ...Object.assign({}, ...sections.map((r) => r.json)),
    checks: reports.flatMap((r) => r.checks),
    violations,
    wallSeconds: (performance.now() - t0) / 1000,
  });
  const bars = scenarios.map((r) => ({
    key: r.key,
    label: r.label,
    perSecond: r.perSecond,
    p99Ms: r.latency.p99,
  }));
  if (bars.length > 0) {
    const svg = file.replace(/\.json$/, '.svg');
    const day = new Date().toISOString().slice(0, 10);
    const subtitle = `${day}, ${os.cpus().length} cores, ${o.seconds} s per scenario, ${o.connections} connections, ${o.topology} topology (d: 409 sold_out answers)`;
    writeFileSync(svg, barChartSvg('npm run bench: order path', subtitle, bars));
    console.log(`chart: ${svg}`);
  }
  console.log(`\nresults: ${file} (wall ${((performance.now() - t0) / 1000).toFixed(0)} s)`);
}

function verdict(violations: Violation[]): number {
  if (violations.length > 0) {
    console.log(`\n${violations.length} INVARIANT VIOLATION(S):`);
    for (const v of violations) console.log(`  [${v.scenario}] ${v.check}: ${v.detail}`);
    return 1;
  }
  console.log(
    '\ninvariants: no oversell, rows == accepted, sold == accepted, available + sold == total: all held',
  );
  return 0;
}

/** Runs the selected phases, then their reports in order; the exit code says whether an invariant broke. */
export async function runPhases(phases: Phase[], o: BenchOptions): Promise<number> {
  const selected = selectPhases(phases, o);
  printMachine(o);
  const run = new BenchRun(o, await startInfra());
  const t0 = performance.now();
  try {
    const outcomes = [];
    for (const phase of selected) outcomes.push(await phase.run(run));
    const scenarios = outcomes.flatMap((outcome) => outcome.scenarios ?? []);
    if (scenarios.length > 0) printScenarioTables(scenarios, o);
    const reports = outcomes.map((outcome) => outcome.report());
    writeFiles(o, scenarios, reports, run.violations, t0);
  } finally {
    await run.close();
  }
  return verdict(run.violations);
}
