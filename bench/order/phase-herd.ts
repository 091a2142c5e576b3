// Phase 6, herd (BENCH_ONLY=herd): a sale with more buyers than capacity, WAITING_ROOM=on and off
// back to back (bench/order/herd.ts), reported against issue 24's targets.
import { runHerd } from './herd.ts';
import { reportHerd } from './herd-report.ts';
import type { Phase } from './phase.ts';

export const herdPhase: Phase = {
  name: 'herd',
  inFullRun: true,
  async run(bench) {
    const result = await runHerd(bench);
    return { report: () => ({ checks: reportHerd(result) }) };
  },
};
