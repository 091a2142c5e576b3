// What a phase of `npm run bench` is to the runner (bench/order/runner.ts): a named step that runs
// against the run's context and hands back an outcome, which the one report asks for its sections.
import type { Check } from '../lib/table.ts';
import type { BenchRun } from './bench-run.ts';
import type { ScenarioResult } from './scenario.ts';

export interface PhaseReport {
  /** Judged against targets (already printed by the phase's report): the run's `checks` in the JSON. */
  checks: Check[];
  /** Sections of .bench/orders.json; the file is written when a phase that ran gives some. */
  json?: Record<string, unknown>;
}

export interface PhaseOutcome {
  /** Closed-model scenarios: in the run's common tables, its chart and the JSON's `scenarios`. */
  scenarios?: ScenarioResult[];
  /** Prints the phase's tables; called once every selected phase has run, in the table's order. */
  report(): PhaseReport;
}

export interface Phase {
  /** `BENCH_ONLY=<name>` runs this phase alone. */
  name: string;
  /** Whether a run without BENCH_ONLY includes it. */
  inFullRun: boolean;
  run(bench: BenchRun): Promise<PhaseOutcome>;
}

/** An outcome whose tables were printed while it ran (or that has none). */
export const printed = (checks: Check[] = [], scenarios: ScenarioResult[] = []): PhaseOutcome => ({
  scenarios,
  report: () => ({ checks }),
});
