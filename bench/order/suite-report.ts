// The suite's own report: the live-reshard section, its ratios against their targets, the ratios it
// only reports, and the same targets from the CPU model; hands back its checks and JSON sections.
import { ratio } from '../lib/stats.ts';
import { type Check, num, printChecks } from '../lib/table.ts';
import { atLeast, info, printReported } from './judge.ts';
import { type BenchOptions, TARGETS } from './options.ts';
import type { PhaseReport } from './phase.ts';
import { type CommandSample, commandChecks } from './phase-commands.ts';
import { dashboardCheck } from './phase-dashboard.ts';
import { type LiveReshard, reportReshard, reshardJson } from './phase-reshard.ts';
import type { ScenarioResult } from './scenario.ts';
import { cpuModel } from './scenario-tables.ts';

export interface SuiteResult {
  results: ScenarioResult[];
  commands: CommandSample;
  reshard: LiveReshard;
}

type Rate = (key: string) => number;

/** `num/den` of two scenarios' orders/s, with both figures. */
const of = (rate: Rate, num_: string, den: string): [number, string] => [
  ratio(rate(num_), rate(den)),
  `${num(rate(num_))} / ${num(rate(den))}`,
];

function reported(rate: Rate, writerC1: number): Check[] {
  const row = (name: string, n: string, d: string) => info(name, ...of(rate, n, d));
  return [
    row('c8/b, suite phases (judged on the core phase)', 'c8', 'b'),
    row('d/a, suite phases (judged on the core phase)', 'd', 'a'),
    row('c8/a, suite phases (judged on the core phase)', 'c8', 'a'),
    row('c8/c1, 2 API processes', 'c8x2', 'c1x2'),
    row('c8/c1, 1 API process', 'c8', 'c1'),
    row('c8x2/c8 (2nd API process)', 'c8x2', 'c8'),
    row('b+enq/b (enqueue cost)', 'b+enq', 'b'),
    row('b+enq/a', 'b+enq', 'a'),
    info('writer/accepted during c1', writerC1, ''),
  ];
}

/** The targets again from the CPU model: an estimate, not a measurement. */
function estimated(est: Rate): Check[] {
  return [
    atLeast('est. c8/b+enq', ratio(est('c8'), est('b+enq')), TARGETS.lockCost, ''),
    atLeast('est. c8/b', ratio(est('c8'), est('b')), TARGETS.lockCost, ''),
    atLeast('est. d/a', ratio(est('d'), est('a')), TARGETS.soldOut, ''),
    atLeast('est. c8/a', ratio(est('c8'), est('a')), TARGETS.fullPath, ''),
  ];
}

export function reportSuite(s: SuiteResult, o: BenchOptions): PhaseReport {
  const by = (key: string) => s.results.find((r) => r.key === key);
  const rate = (key: string) => by(key)?.perSecond ?? Number.NaN;
  const { everyMs, firstMs, seconds } = o.reshard;
  const live = reportReshard(s.reshard, { connections: o.connections, everyMs, firstMs });
  const c8w = by('c8')?.writer;
  const [lockCost, lockDetail] = of(rate, 'c8', 'b+enq');
  const checks: Check[] = [
    atLeast(
      'c8/b+enq (lock cost: real path / lock-free, both enqueue)',
      lockCost,
      TARGETS.lockCost,
      lockDetail,
    ),
    atLeast(
      'writer/accepted during c8',
      c8w?.ratio ?? Number.NaN,
      TARGETS.writer,
      `${num(c8w?.rowsPerSecond)} rows/s / ${num(c8w?.acceptedPerSecond)} accepted/s`,
    ),
    ...live.checks,
    dashboardCheck(rate),
    ...commandChecks(s.commands),
  ];
  printChecks('Ratios against their targets', checks);
  const info_ = [...reported(rate, by('c1')?.writer?.ratio ?? Number.NaN), ...live.reported];
  printReported('Reported (no target)', info_);
  const model = estimated((key) => {
    const r = by(key);
    return r ? cpuModel(r).estimate : Number.NaN;
  });
  printChecks('The same ratios from the CPU model (an estimate, not a measurement)', model);
  const reshard = reshardJson(s.reshard, { seconds, everyMs });
  return { checks, json: { reported: info_, estimated: model, reshard } };
}
