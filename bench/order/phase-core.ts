// The core phase (BENCH_ONLY=core, first of the full run): a b c8 d on warmed processes in
// interleaved rounds and the cheap answers, on which the c8/a, c8/b and d/a targets are judged.
import { repoRoot } from '../lib/output.ts';
import { runCore } from './core-run.ts';
import { type Phase, printed } from './phase.ts';

export const corePhase: Phase = {
  name: 'core',
  inFullRun: true,
  async run(bench) {
    const self = { name: 'this', root: repoRoot };
    const core = await runCore(bench.infra, [self], self, bench.log);
    // runCore has logged them as they were found.
    bench.violations.push(...core.violations);
    return printed(core.checks); // its tables and checks are printed
  },
};
