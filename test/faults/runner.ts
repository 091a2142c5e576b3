// The runner the fault and partition suites share: picks the scenarios asked for, runs them in lanes
// side by side (each bounded in time, its processes and stores reaped after it), prints the report,
// writes .bench/<suite>.json and exits 1 unless every scenario run kept every invariant.
import { mkdirSync, writeFileSync } from 'node:fs';
import { withTimeout } from '../../harness/async.ts';
import { emptyResult, reapScenario, type ScenarioResult, scenarioScope } from './lib.ts';

export interface Scenario {
  id: string;
  name: string;
  run: () => Promise<ScenarioResult>;
  /** Hard limit: the suite is bounded in time even if a scenario hangs. */
  timeoutMs: number;
  /** Typical duration, to balance the lanes. */
  expectMs: number;
}

export interface SuiteOptions {
  /** Names the log lines and the JSON file (.bench/<suite>.json). */
  suite: string;
  scenarios: Scenario[];
  /** Environment variable prefix: <PREFIX> (ids to run, besides argv), <PREFIX>_SKIP, <PREFIX>_LANES. */
  env: string;
  report: (results: ScenarioResult[]) => string;
}

const list = (v: string | undefined) =>
  (v ?? '')
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);

/** Runs the suite and exits: 0 when at least one scenario ran and every one kept every invariant. */
export async function runSuite(o: SuiteOptions): Promise<never> {
  // process.exit runs the 'exit' hooks that stop every process and store the suite started.
  for (const signal of ['SIGINT', 'SIGTERM'] as const) process.once(signal, () => process.exit(130));
  const wanted = [...process.argv.slice(2), ...list(process.env[o.env])];
  const skipped = list(process.env[`${o.env}_SKIP`]);
  const chosen = o.scenarios.filter(
    (s) => (wanted.length === 0 || wanted.includes(s.id)) && !skipped.includes(s.id),
  );
  const lanes = Math.max(1, Number(process.env[`${o.env}_LANES`] ?? 2) || 1);
  const started = performance.now();
  const results: ScenarioResult[] = [];
  await Promise.all(
    inLanes(chosen, lanes).map(async (lane) => {
      for (const s of lane) {
        process.stderr.write(`[${o.suite}] scenario ${s.id}: ${s.name}\n`);
        const r = await runOne(s);
        process.stderr.write(
          `[${o.suite}] scenario ${s.id}: ${r.ok ? 'ok' : 'FAIL'} in ${(r.ms / 1000).toFixed(1)} s\n`,
        );
        results.push(r);
      }
    }),
  );
  results.sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
  const totalMs = Math.round(performance.now() - started);
  const ok = results.length > 0 && results.every((r) => r.ok);
  process.stdout.write(`\n${o.report(results)}\n\ntotal ${(totalMs / 1000).toFixed(1)} s\n`);
  mkdirSync('.bench', { recursive: true });
  writeFileSync(
    `.bench/${o.suite}.json`,
    `${JSON.stringify({ at: new Date().toISOString(), totalMs, ok, results }, null, 2)}\n`,
  );
  process.exit(ok ? 0 : 1);
}

/** Longest first, each to the lane with the least work so far. */
function inLanes(scenarios: Scenario[], count: number): Scenario[][] {
  const lanes: Scenario[][] = Array.from({ length: count }, () => []);
  const work = lanes.map(() => 0);
  for (const s of [...scenarios].sort((a, b) => b.expectMs - a.expectMs)) {
    const lane = work.indexOf(Math.min(...work));
    lanes[lane]?.push(s);
    work[lane] = (work[lane] ?? 0) + s.expectMs;
  }
  return lanes;
}

async function runOne(s: Scenario): Promise<ScenarioResult> {
  const started = performance.now();
  const result = await withTimeout(
    scenarioScope.run(s.id, () => s.run()),
    s.timeoutMs,
    `scenario ${s.id}`,
  ).catch((err: unknown) => {
    const r = emptyResult(s.id, s.name);
    r.ok = false;
    r.failures.push(`scenario error: ${(err as Error).stack ?? String(err)}`);
    return r;
  });
  // A scenario that hung leaves its processes and stores running: stop them before going on.
  await reapScenario(s.id);
  result.ms = Math.round(performance.now() - started);
  return result;
}
