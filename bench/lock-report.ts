// The contended tables of `npm run bench:locks`: per library and setting the median hand-offs/s of the
// interleaved rounds with their range, wait p50/p99/max beside them, the fraction of both ceilings
// (Redis' commands/s over server commands per hand-off; 1 / (critical section + one round trip)), the
// server commands per contended acquisition, and the checks against issue #42's targets.
import { ratio, type Spread, type Summary, spreadOf } from './lib/stats.ts';
import { type Check, mark, ms, num, printTable, times } from './lib/table.ts';
import { CONTENDERS, DRAIN_MS, type PhaseResult } from './lock-phases.ts';

export const TARGETS = {
  /** Our median hand-offs/s over the best peer's, by `<processes>/<pause ms>` (issue #42). */
  handoffRatio: { '2/0': 2, '2/2': 1.5, '10/0': 2, '10/2': 1.5 } as Record<string, number>,
  clientCommandsPerAcquisition: 3,
  maxWaitMs: 1_000,
  uncontendedRatio: 1.3,
};

/** What the machine allows: Redis' commands/s, and one idle round trip (ms). */
export interface Ceilings {
  redisCommandsPerSec: number;
  roundTripMs: number;
}

/** One library in one setting: every round pooled (tails, commands), and hand-offs/s per round. */
export interface LibReport {
  pooled: PhaseResult;
  handoffs: Spread;
  /** Our hand-offs/s over this library's, round by round (rounds are interleaved, so paired). */
  ours: Spread;
}

export interface ConfigurationReport {
  processes: number;
  pauseMs: number;
  rounds: number;
  libs: LibReport[];
  bestPeer: string | undefined;
  checks: Check[];
}

/** Server-side commands per hand-off: per acquisition, scaled by acquisitions per hand-off. */
function serverCommandsPerHandoff(r: PhaseResult): number {
  return r.serverCommandsPerAcquisition * ratio(r.acquisitionsPerSec, r.handoffsPerSec);
}

function commandsCeiling(r: PhaseResult, c: Ceilings): number {
  return ratio(c.redisCommandsPerSec, serverCommandsPerHandoff(r));
}

/** 1 / (critical section + one round trip): a hand-off cannot be quicker than the section and one trip. */
function sectionCeiling(r: PhaseResult, c: Ceilings): number {
  return ratio(1_000, r.holdMs.p50 + c.roundTripMs);
}

/** Per library, per round: hand-offs/s, and the per-round ratio of ours to it. */
export function libReports(perRound: PhaseResult[][], pooled: PhaseResult[]): LibReport[] {
  return pooled.map((p, i) => {
    const rounds = perRound.map((round) => round[i] as PhaseResult);
    return {
      pooled: p,
      handoffs: spreadOf(rounds.map((r) => r.handoffsPerSec)),
      ours: spreadOf(
        perRound.map((round) => ratio(round[0]?.handoffsPerSec ?? 0, round[i]?.handoffsPerSec ?? 0)),
      ),
    };
  });
}

export function evaluate(
  processes: number,
  pauseMs: number,
  rounds: number,
  libs: LibReport[],
): ConfigurationReport {
  const ours = libs.find((l) => l.pooled.lib === 'flashsale');
  // The strict hand-off variant is this library too: a comparison row, not a peer.
  const peers = libs.filter((l) => !l.pooled.lib.startsWith('flashsale'));
  const best = peers.reduce<LibReport | undefined>(
    (b, p) => (!b || p.handoffs.median > b.handoffs.median ? p : b),
    undefined,
  );
  const where = `${processes} proc, pause ${pauseMs} ms`;
  const checks: Check[] = [];
  if (ours) {
    const o = ours.pooled;
    const target = TARGETS.handoffRatio[`${processes}/${pauseMs}`] ?? 1;
    const r = best ? ratio(ours.handoffs.median, best.handoffs.median) : Number.NaN;
    checks.push({
      name: `${where}: hand-offs/s >= ${target}x best peer (medians)`,
      pass: r >= target,
      detail: `${times(r)} (${num(ours.handoffs.median)} vs ${best?.pooled.lib} ${num(best?.handoffs.median)}; per round ${spreadText(best?.ours, times)})`,
    });
    const peer = best?.pooled;
    checks.push({
      name: `${where}: wait p99 <= best peer's`,
      pass: peer !== undefined && o.waitMs.p99 <= peer.waitMs.p99,
      detail: `${ms(o.waitMs.p99)} ms vs ${peer?.lib} ${ms(peer?.waitMs.p99)} ms; longest ${ms(o.waitMs.max)} vs ${ms(peer?.waitMs.max)} ms`,
    });
    checks.push({
      name: `${where}: client commands/acquisition <= ${TARGETS.clientCommandsPerAcquisition}`,
      pass: o.clientCommandsPerAcquisition <= TARGETS.clientCommandsPerAcquisition,
      detail: `${num(o.clientCommandsPerAcquisition, 2)} (server-side incl. script calls: ${num(o.serverCommandsPerAcquisition, 2)})`,
    });
    checks.push({
      name: `${where}: no contender starved (max wait < ${TARGETS.maxWaitMs} ms), overlaps = 0`,
      pass: o.neverAcquired === 0 && o.maxWaitMs < TARGETS.maxWaitMs && o.overlaps === 0,
      detail: `never acquired ${o.neverAcquired}, max wait ${ms(o.maxWaitMs)} ms, overlaps ${o.overlaps}`,
    });
  }
  return { processes, pauseMs, rounds, libs, bestPeer: best?.pooled.lib, checks };
}

function spreadText(s: Spread | undefined, f: (v: number) => string): string {
  if (!s || s.n === 0) return '-';
  return s.n > 1 ? `${f(s.median)} (${f(s.min)}–${f(s.max)})` : f(s.median);
}

const count = (v: number) => num(v);

export function printConfiguration(report: ConfigurationReport, ceilings: Ceilings, seconds: number): void {
  const { processes, pauseMs, rounds, libs } = report;
  const rs = rounds > 1 ? `median of ${rounds} interleaved rounds × ${seconds} s (range)` : `${seconds} s`;
  printTable(
    `=== ${CONTENDERS} contenders over ${processes} processes, ${pauseMs ? `${pauseMs} ms pause` : 'no pause'} after release, ${rs} ===`,
    [
      { header: 'library', value: (l: LibReport) => l.pooled.lib, align: 'left' },
      { header: 'hand-offs/s', value: (l) => spreadText(l.handoffs, count) },
      {
        header: 'ours ×',
        value: (l) => (l.pooled.lib === 'flashsale' ? '' : spreadText(l.ours, (v) => times(v))),
      },
      { header: 'wait p50 ms', value: (l) => ms(l.pooled.waitMs.p50) },
      { header: 'wait p99 ms', value: (l) => ms(l.pooled.waitMs.p99) },
      { header: 'wait max ms', value: (l) => ms(l.pooled.waitMs.max) },
      { header: 'cmds/acq server', value: (l) => num(l.pooled.serverCommandsPerAcquisition, 2) },
      { header: 'cmds/acq client', value: (l) => num(l.pooled.clientCommandsPerAcquisition, 2) },
      { header: 'of cmd ceiling', value: (l) => fraction(l, commandsCeiling(l.pooled, ceilings)) },
      { header: 'of section ceiling', value: (l) => fraction(l, sectionCeiling(l.pooled, ceilings)) },
      { header: 'redis cpu%', value: (l) => num(l.pooled.serverCpuPercent) },
      { header: 'procs cpu%', value: (l) => num(l.pooled.clientCpuPercent) },
      { header: 'never got lock', value: (l) => num(l.pooled.neverAcquired) },
      { header: 'overlaps', value: (l) => num(l.pooled.overlaps) },
    ],
    libs,
  );
  printDetails(
    libs.map((l) => l.pooled),
    ceilings,
  );
  console.log('');
  for (const c of report.checks) console.log(`  ${mark(c.pass)}  ${c.name}: ${c.detail}`);
}

function fraction(l: LibReport, ceiling: number): string {
  const f = ratio(l.handoffs.median, ceiling);
  return Number.isFinite(f) ? `${(100 * f).toFixed(0)}% of ${num(ceiling)}` : '-';
}

function printDetails(results: PhaseResult[], ceilings: Ceilings): void {
  const perAcq = (r: PhaseResult) =>
    Object.entries(r.clientCommands)
      .sort((a, b) => b[1] - a[1])
      .map(([cmd, n]) => `${cmd} ${num(n / Math.max(1, r.acquisitions), 2)}`)
      .join(', ') || '-';
  printTable(
    '  details (all rounds pooled)',
    [
      { header: '  library', value: (r: PhaseResult) => `  ${r.lib}`, align: 'left' },
      { header: 'acq/s', value: (r) => num(r.acquisitionsPerSec) },
      { header: 'acquire p50/p99 ms', value: (r) => `${ms(r.latencyMs.p50)}/${ms(r.latencyMs.p99)}` },
      { header: 'hold p50', value: (r) => ms(r.holdMs.p50) },
      { header: 'gap p50/p99 same proc', value: (r) => gapText(r.handoffGapSameProcessMs) },
      { header: 'gap p50/p99 other proc', value: (r) => gapText(r.handoffGapOtherProcessMs) },
      { header: 'cmds/hand-off server', value: (r) => num(serverCommandsPerHandoff(r), 2) },
      { header: 'gave up', value: (r) => num(r.gaveUp) },
      { header: 'errors', value: (r) => num(r.errors) },
      { header: 'client commands per acquisition', value: perAcq, align: 'left' },
    ],
    results,
  );
  for (const r of results) {
    if (r.errorSamples.length) console.log(`  ${r.lib} errors: ${r.errorSamples.join(' | ')}`);
    if (r.drainTimedOut)
      console.log(`  ${r.lib}: in-flight acquisitions did not finish within ${DRAIN_MS} ms`);
  }
  const server = results.find((r) => r.lib === 'flashsale');
  if (server) {
    const list = Object.entries(server.serverCommands)
      .sort((a, b) => b[1] - a[1])
      .map(([cmd, n]) => `${cmd} ${num(n / Math.max(1, server.acquisitions), 2)}`)
      .join(', ');
    console.log(
      `  flashsale server commands per contended acquisition: ${list} (round trip ${ms(ceilings.roundTripMs)} ms)`,
    );
  }
}

function gapText(s: Summary): string {
  return s.count ? `${ms(s.p50)}/${ms(s.p99)} (${num(s.count)})` : '-';
}

export function printLegend(): void {
  console.log(
    [
      '',
      'Contended runs. hand-offs/s: acquisitions by a different contender than the previous holder (order =',
      'the INCR value taken inside the critical section), median of the rounds with their range; ours ×:',
      'this library over that one, round by round. wait: from wanting the lock to holding it, failed attempts',
      'included, per acquisition (all rounds pooled). cmds/acq client: every command the contenders sent',
      '(release, retries, SUBSCRIBE... included; the benchmark’s own INCR/DECR excluded) per acquisition;',
      'server: INFO commandstats delta per acquisition, which also counts the calls made inside Lua scripts.',
      'of cmd ceiling: hand-offs/s over redis-server commands/s here (pipelined INCR) / server commands per',
      'hand-off. of section ceiling: over 1 / (critical section p50 + one idle round trip). hold: the critical',
      'section (one INCR round trip). gap: previous holder calling release → next holder having the lock.',
      'cpu%: CPU time in the window over its length (100 = one core). overlaps must be 0.',
    ].join('\n'),
  );
}
