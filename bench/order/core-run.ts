// The core scenarios and the cheap answers on the given sides, with their tables: what
// `BENCH_ONLY=core npm run bench` (this tree) and `npm run bench:compare` (two trees) run.
import os from 'node:os';
import type { Infra } from '../../harness/service.ts';
import { envNumber } from '../lib/output.ts';
import type { Check } from '../lib/table.ts';
import { type CheapRuns, cheapAnswers } from './cheap-answers.ts';
import type { Violation } from './checks.ts';
import { type CoreRuns, coreRounds } from './core.ts';
import { printCheap, printCore } from './core-report.ts';
import { type Side, SideProcesses } from './sides.ts';

export interface CoreRunResult {
  core: CoreRuns;
  cheap?: CheapRuns;
  checks: Check[];
  violations: Violation[];
  loadavg: { before: number[]; after: number[] };
}

/**
 * BENCH_SECONDS (window, default 5), BENCH_WARMUP_SECONDS (default 2), BENCH_REPEATS (rounds,
 * default 3), BENCH_CONNECTIONS (default 100); BENCH_CHEAP=0 leaves the cheap answers out, BENCH_CORE=0
 * the core scenarios.
 */
export async function runCore(
  infra: Infra,
  sides: Side[],
  writer: Side,
  log: (l: string) => void,
): Promise<CoreRunResult> {
  const seconds = envNumber('BENCH_SECONDS', 5);
  const rounds = Math.round(envNumber('BENCH_REPEATS', 3));
  const violations: Violation[] = [];
  const record = (found: Violation[]) => {
    for (const v of found) {
      violations.push(v);
      log(`  VIOLATION [${v.scenario}] ${v.check}: ${v.detail}`);
    }
  };
  const procs = new SideProcesses(infra);
  const before = os.loadavg();
  try {
    const names = sides.map((s) => s.name).join(' and ');
    const skipCore = process.env.BENCH_CORE === '0';
    if (!skipCore) log(`core scenarios a b c8 d, ${rounds} interleaved rounds on ${names}`);
    const core: CoreRuns = skipCore
      ? new Map()
      : await coreRounds({
          infra,
          procs,
          sides,
          writer,
          rounds,
          seconds,
          warmupSeconds: envNumber('BENCH_WARMUP_SECONDS', 2),
          connections: Math.round(envNumber('BENCH_CONNECTIONS', 100)),
          log,
          record,
        });
    let cheap: CheapRuns | undefined;
    if (process.env.BENCH_CHEAP !== '0') {
      log('cheap answers: queued, sold_out, not_started, busy, rate_limited vs node:http');
      cheap = await cheapAnswers({
        infra,
        procs,
        sides,
        rounds,
        seconds: Math.min(seconds, 3),
        connections: 50,
        log,
      });
    }
    const checks = skipCore ? [] : printCore(core, sides, seconds);
    if (cheap) checks.push(...printCheap(cheap, sides));
    return { core, cheap, checks, violations, loadavg: { before, after: os.loadavg() } };
  } finally {
    await procs.stopAll();
  }
}
