// A local load run's verdict: what the client saw set against the server's numbers (the checks that
// fail the run) and the latency and schedule thresholds (enforced only with THRESHOLDS=1).
import type { Vars } from './options.ts';
import { latencyStats } from './report.ts';
import type { ScenarioResult } from './scenarios.ts';
import type { Target } from './target.ts';
import { type Check, type ServerView, serverChecks } from './verify.ts';

export interface RunFacts {
  result: ScenarioResult;
  view: ServerView;
  target: Target;
  productId: string;
  /** Against a BASE_URL (not a stack of our own): the service's health and logs are not ours to see. */
  external: boolean;
  aborted?: Error;
  drainTimeoutSec: number;
}

function sumOf(result: ScenarioResult) {
  return (f: (r: ScenarioResult['phases'][number]) => number) => result.phases.reduce((a, r) => a + f(r), 0);
}

/** The rows (or, without Postgres access, the confirmed units) against the 202s the client saw. */
function rowsCheck(rows: number | null, accepted: number, view: ServerView): Check {
  if (rows === null)
    return {
      name: `every 202 is a confirmed unit: server confirmed == 202s seen (${accepted})`,
      ok: view.state?.confirmed === accepted,
      detail: `confirmed ${view.state?.confirmed}`,
    };
  return {
    name: `every 202 is one row in Postgres: rows == 202s seen (${accepted})`,
    ok: rows === accepted,
    detail: `rows ${rows}`,
  };
}

/** The checks that fail the run. */
export async function runChecks(f: RunFacts, vars: Vars): Promise<Check[]> {
  const { result, view, target } = f;
  const sum = sumOf(result);
  const accepted = sum((r) => r.outcomes.accepted);
  const unexpected = sum((r) => r.outcomes.unexpected);
  const fiveXX = sum((r) => [...r.statuses].reduce((a, [code, n]) => a + (code >= 500 ? n : 0), 0));
  const exited = target.exited();
  const errorLines = target.errorLines();
  const checks: Check[] = [];
  if (f.aborted) checks.push({ name: 'run completed', ok: false, detail: String(f.aborted.message) });
  if (!f.external)
    checks.push({ name: 'the service stayed up', ok: exited === null, detail: exited ?? undefined });
  checks.push(
    { name: 'no 5xx answers', ok: fiveXX === 0, detail: `${fiveXX}` },
    {
      name: 'no answer outside the contract (unexpected == 0)',
      ok: unexpected === 0,
      detail: `${unexpected}`,
    },
    {
      name: `no oversell seen by the client: 202s (${accepted}) <= units put on sale (${result.totalPutOnSale})`,
      ok: accepted <= result.totalPutOnSale,
    },
    rowsCheck(await target.rows(f.productId), accepted, view),
    ...serverChecks(view, {
      total: result.totalPutOnSale,
      soldOut: result.soldOut,
      drainTimeoutSec: f.drainTimeoutSec,
    }),
    ...result.checks,
  );
  if (errorLines !== null)
    checks.push({
      name: 'the service logged no error',
      ok: errorLines.length === 0,
      detail: errorLines.slice(0, 3).join('\n      '),
    });
  if (vars.has('MAX_BUSY_RATE')) {
    // Opt-in like in k6: when set, it is enforced.
    const busy =
      sum((r) => r.outcomes.busy) /
      Math.max(
        1,
        sum((r) => r.answered),
      );
    const bound = vars.number('MAX_BUSY_RATE', 1);
    checks.push({
      name: `busy share <= MAX_BUSY_RATE ${bound}`,
      ok: busy <= bound,
      detail: `${(busy * 100).toFixed(2)}%`,
    });
  }
  return checks;
}

/** Latency of the 202s and each phase's schedule, then the scenario's own thresholds. */
export function thresholds(result: ScenarioResult, vars: Vars): Check[] {
  const p95Bound = vars.number('P95_MS', 250);
  const p99Bound = vars.number('P99_MS', 500);
  const lat = latencyStats(result.phases.flatMap((r) => r.acceptedMs));
  const fmt = (v: number | undefined) => (v === undefined ? 'no 202s' : `${v.toFixed(1)}ms`);
  const out: Check[] = [
    {
      name: `p95 of 202s < ${p95Bound}ms`,
      ok: lat.p95 === undefined || lat.p95 < p95Bound,
      detail: fmt(lat.p95),
    },
    {
      name: `p99 of 202s < ${p99Bound}ms`,
      ok: lat.p99 === undefined || lat.p99 < p99Bound,
      detail: fmt(lat.p99),
    },
  ];
  for (const r of result.phases) {
    const lag = r.plannedSec ? r.elapsedSec / r.plannedSec - 1 : 0;
    out.push({
      name: `${r.name}: the schedule held (ran at most 10% over its planned ${r.plannedSec.toFixed(0)}s)`,
      ok: lag <= 0.1,
      detail: `${r.elapsedSec.toFixed(1)}s, ${lag >= 0 ? '+' : ''}${Math.round(lag * 100)}%`,
    });
  }
  return [...out, ...result.thresholds];
}
