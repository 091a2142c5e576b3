// The JSON summary a local load run leaves (<SUMMARY_DIR>/<scenario>.local.summary.json): its
// variables (the known ones, never ADMIN_TOKEN), each phase's figures, the server's view, the checks.
import { writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { phaseStats } from './report.ts';
import type { ScenarioResult } from './scenarios.ts';
import type { Check, ServerView } from './verify.ts';

/** The variables of loadtest/README.md: only these go into the summary. */
const KNOWN = new Set(
  'BASE_URL STOCK SHARDS RATE DURATION RAMP PRODUCT_ID PER_USER_LIMIT IDEMPOTENCY P95_MS P99_MS MAX_BUSY_RATE DRAIN_TIMEOUT READY_TIMEOUT SUMMARY_DIR RESHARD_EVERY MAX_SHARDS RESHARD_P95_MS RUSH_RATE RUSH_DURATION SOLDOUT_P95_MS SOLDOUT_P99_MS MIN_SOLD_OUT_RATE RESTOCK_EVERY RESTOCK PHASE_WINDOW LATE_P99_MS MAX_DRIFT MIN_BASELINE CONNECTIONS THRESHOLDS WARMUP'.split(
    ' ',
  ),
);

export interface Summary {
  name: string;
  passed: boolean;
  productId: string;
  raw: Record<string, string>;
  result: ScenarioResult;
  view: ServerView;
  checks: Check[];
  thresholds: Check[];
}

/** Writes the summary into `dir` (relative to the repository root); a failure to write is a warning. */
export function writeSummary(root: string, dir: string, s: Summary): void {
  const file = join(resolve(root, dir), `${s.name}.local.summary.json`);
  const vars = Object.entries(s.raw).filter(
    ([k]) => /^[A-Z][A-Z0-9_]*$/.test(k) && k !== 'ADMIN_TOKEN' && KNOWN.has(k),
  );
  const body = {
    scenario: s.name,
    passed: s.passed,
    productId: s.productId,
    vars: Object.fromEntries(vars),
    phases: s.result.phases.map((p) => ({ name: p.name, ...phaseStats(p) })),
    server: s.view.state,
    reconcile: s.view.reconcile.body,
    checks: s.checks,
    thresholds: s.thresholds,
  };
  try {
    writeFileSync(file, `${JSON.stringify(body, null, 2)}\n`);
    console.log(`  summary written to ${file}`);
  } catch (err) {
    console.warn(`  could not write ${file}: ${(err as Error).message}`);
  }
}
