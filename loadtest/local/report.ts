// The summary a local run prints: pacing, answers by outcome and status, latency of 202s (and of
// the storm's 409s), the server's numbers after drain, then every check with ✓/✗.
import { percentile, type Recorder } from './load.ts';
import type { ScenarioResult } from './scenarios.ts';
import { type Check, describeState, type ServerView } from './verify.ts';

const ms = (v: number | undefined) =>
  v === undefined ? '-' : v >= 1000 ? `${(v / 1000).toFixed(2)}s` : `${v.toFixed(1)}`;

function table(rows: string[][]): string[] {
  const widths = rows[0]?.map((_, c) => Math.max(...rows.map((r) => (r[c] ?? '').length))) ?? [];
  return rows.map(
    (r) =>
      `    ${r.map((cell, c) => (c === 0 ? cell.padEnd(widths[c] ?? 0) : cell.padStart(widths[c] ?? 0))).join('  ')}`,
  );
}

export function latencyStats(values: number[]) {
  const sorted = [...values].sort((a, b) => a - b);
  return {
    n: sorted.length,
    p50: percentile(sorted, 50),
    p95: percentile(sorted, 95),
    p99: percentile(sorted, 99),
    max: sorted.at(-1),
  };
}

export function phaseStats(rec: Recorder) {
  return {
    planned: rec.plannedRequests,
    sent: rec.sent,
    answered: rec.answered,
    plannedSec: rec.plannedSec,
    elapsedSec: Math.round(rec.elapsedSec * 100) / 100,
    plannedRate: rec.plannedSec ? rec.plannedRequests / rec.plannedSec : 0,
    achievedRate: rec.elapsedSec ? rec.answered / rec.elapsedSec : 0,
    outcomes: rec.outcomes,
    statuses: Object.fromEntries(rec.statuses),
    unexpectedReasons: Object.fromEntries(rec.reasons),
    accepted: latencyStats(rec.acceptedMs),
    soldOut: latencyStats(rec.soldOutMs),
  };
}

export interface Report {
  scenario: string;
  target: string;
  sale: string;
  result: ScenarioResult;
  view: ServerView;
  checks: Check[];
  thresholds: Check[];
  enforceThresholds: boolean;
  failed: boolean;
}

const PHASE_HEADER = [
  ...['phase', 'rate/s plan', 'achieved', 'secs plan', 'actual', 'requests', '202', '409'],
  ...['429 queued', '429 busy', '429 rate_limited', 'unexpected'],
];

function phaseTable(phases: Recorder[]): string[] {
  const rows = phases.map((p) => {
    const s = phaseStats(p);
    const o = s.outcomes;
    return [
      p.name,
      s.plannedRate.toFixed(0),
      s.achievedRate.toFixed(0),
      s.plannedSec.toFixed(1),
      s.elapsedSec.toFixed(1),
      ...[s.answered, o.accepted, o.sold_out, o.queued, o.busy, o.rate_limited, o.unexpected].map(String),
    ];
  });
  return table([PHASE_HEADER, ...rows]);
}

function latencyTable(phases: Recorder[]): string[] {
  const row = (name: string, values: number[]) => {
    const a = latencyStats(values);
    return [name, String(a.n), ms(a.p50), ms(a.p95), ms(a.p99), ms(a.max)];
  };
  const lat: string[][] = [['latency (ms)', 'n', 'p50', 'p95', 'p99', 'max']];
  for (const p of phases) {
    lat.push(row(`${p.name}: 202 accepted`, p.acceptedMs));
    if (p.soldOutMs.length > 0) lat.push(row(`${p.name}: 409 sold_out`, p.soldOutMs));
  }
  return table(lat);
}

/** Statuses and unexpected answers over the phases, with the samples the phases kept. */
function answerLines(phases: Recorder[]): string[] {
  const statuses = new Map<number, number>();
  const reasons = new Map<string, number>();
  for (const p of phases) {
    for (const [k, v] of p.statuses) statuses.set(k, (statuses.get(k) ?? 0) + v);
    for (const [k, v] of p.reasons) reasons.set(k, (reasons.get(k) ?? 0) + v);
  }
  const byStatus = [...statuses.entries()]
    .sort(([a], [b]) => a - b)
    .map(([k, v]) => `${k === 0 ? 'no answer' : k} x${v}`);
  const out = [`  statuses: ${byStatus.join('   ') || '-'}`];
  if (reasons.size > 0)
    out.push(`  unexpected: ${[...reasons.entries()].map(([k, v]) => `${k} x${v}`).join('   ')}`);
  for (const p of phases) for (const sample of p.samples) out.push(`    e.g. [${p.name}] ${sample}`);
  return out;
}

function checkLines(r: Report): string[] {
  const out = ['  checks'];
  for (const c of r.checks)
    out.push(`    ${c.ok ? '✓' : '✗'} ${c.name}${!c.ok && c.detail ? `: ${c.detail}` : ''}`);
  out.push(
    r.enforceThresholds
      ? '  thresholds (enforced)'
      : '  thresholds (reported only; --thresholds enforces them)',
  );
  for (const c of r.thresholds)
    out.push(
      `    ${c.ok ? '✓' : r.enforceThresholds ? '✗' : '!'} ${c.name}${c.detail ? `  (${c.detail})` : ''}`,
    );
  return out;
}

export function render(r: Report): string {
  const phases = r.result.phases;
  return [
    '',
    `  ${r.scenario} (local runner, autocannon): ${r.failed ? 'FAILED' : 'passed'}`,
    `  target  ${r.target}`,
    `  sale    ${r.sale}`,
    '',
    ...phaseTable(phases),
    '',
    ...latencyTable(phases),
    '',
    ...answerLines(phases),
    ...r.result.lines,
    `  server after ${r.view.waitedSec.toFixed(1)}s drain: ${describeState(r.view)}`,
    '',
    ...checkLines(r),
    '',
  ].join('\n');
}
