// Tables of the core scenarios and the cheap answers, for one side (`npm run bench`) or several
// (`npm run bench:compare`): medians with the range of the rounds, the targets judged on medians,
// and with two sides the ratio of every figure (second side over first).
import { ratio, type Spread, spreadOf } from '../lib/stats.ts';
import { type Check, num, printChecks, printTable, times } from '../lib/table.ts';
import { CHEAP_KINDS, CHEAP_TARGET, type CheapRuns } from './cheap-answers.ts';
import { CORE_KEYS, CORE_LABELS, type CoreKey, type CoreRuns } from './core.ts';
import type { Measured } from './measure.ts';
import type { Side } from './sides.ts';

/**
 * The issue's targets, on the medians, judged by API CPU per answer (c8/a >= 0.67: an accepted order
 * costs the API at most 1.5x the bare 202). The answers/s ratio is printed beside it: it equals the
 * CPU ratio only while the API is what runs out, and on a shared 2-core machine c8's orders also
 * load the writer and Postgres, which a and b never do.
 */
export const CORE_TARGETS: Array<{ name: string; num: CoreKey; den: CoreKey; target: number }> = [
  { name: 'c8/a', num: 'c8', den: 'a', target: 0.67 },
  { name: 'c8/b', num: 'c8', den: 'b', target: 0.9 },
  { name: 'd/a', num: 'd', den: 'a', target: 0.95 },
];

const rateOf = (ms: Measured[]) => spreadOf(ms.map((m) => m.rate));
const cpuOf = (ms: Measured[]) => spreadOf(ms.map((m) => m.cpuUs));
const range = (s: Spread, digits = 0) =>
  `${num(s.median, digits)} (${num(s.min, digits)}–${num(s.max, digits)})`;

/** Per scenario and side: answers/s and API CPU µs per answer, median (min–max). */
export function printCore(runs: CoreRuns, sides: Side[], seconds: number): Check[] {
  const rows = CORE_KEYS.flatMap((key) =>
    sides.map((side) => ({ key, side, ms: runs.get(side.name)?.[key] ?? [] })),
  );
  printTable(
    `Core scenarios, ${seconds} s windows, median (min–max) of ${rows[0]?.ms.length ?? 0} interleaved rounds`,
    [
      { header: 'scenario', value: (r) => r.key, align: 'left' },
      { header: 'what', value: (r) => CORE_LABELS[r.key], align: 'left' },
      { header: 'side', value: (r) => r.side.name, align: 'left' },
      { header: 'answers/s', value: (r) => range(rateOf(r.ms)) },
      { header: 'API CPU µs/answer', value: (r) => range(cpuOf(r.ms)) },
      { header: 'load1', value: (r) => r.ms.map((m) => m.load1.toFixed(1)).join(' '), align: 'left' },
    ],
    rows,
  );
  const checks: Check[] = [];
  for (const side of sides) {
    const by = runs.get(side.name);
    if (!by) continue;
    for (const t of CORE_TARGETS) {
      const r = ratio(rateOf(by[t.num]).median, rateOf(by[t.den]).median);
      const cpu = ratio(cpuOf(by[t.den]).median, cpuOf(by[t.num]).median);
      checks.push({
        name: `${side.name}: ${t.name} (by API CPU per answer, medians) >= ${t.target.toFixed(2)}`,
        pass: Number.isFinite(cpu) && cpu >= t.target,
        detail: `${times(cpu, 3)}   by answers/s ${times(r, 3)}`,
      });
    }
  }
  printChecks('Core ratios against their targets (medians)', checks);
  if (sides.length === 2) printCoreComparison(runs, sides as [Side, Side]);
  return checks;
}

function printCoreComparison(runs: CoreRuns, [a, b]: [Side, Side]): void {
  const rows = CORE_KEYS.map((key) => ({
    key,
    a: runs.get(a.name)?.[key] ?? [],
    b: runs.get(b.name)?.[key] ?? [],
  }));
  printTable(
    `${b.name} against ${a.name}, medians (a ratio > 1 means ${b.name} answers faster / spends more CPU)`,
    [
      { header: 'scenario', value: (r) => r.key, align: 'left' },
      { header: `${a.name} /s`, value: (r) => num(rateOf(r.a).median) },
      { header: `${b.name} /s`, value: (r) => num(rateOf(r.b).median) },
      { header: 'rate ratio', value: (r) => times(ratio(rateOf(r.b).median, rateOf(r.a).median), 3) },
      { header: `${a.name} µs`, value: (r) => num(cpuOf(r.a).median) },
      { header: `${b.name} µs`, value: (r) => num(cpuOf(r.b).median) },
      { header: 'CPU ratio', value: (r) => times(ratio(cpuOf(r.b).median, cpuOf(r.a).median), 3) },
    ],
    rows,
  );
}

/** Per kind and side: API CPU per answer against the bare node:http answer of the same size. */
export function printCheap(runs: CheapRuns, sides: Side[]): Check[] {
  const rows = CHEAP_KINDS.flatMap((kind) =>
    sides.map((side) => ({
      kind,
      side,
      api: cpuOf(runs.api.get(side.name)?.[kind] ?? []),
      bare: cpuOf(runs.bare[kind]),
    })),
  );
  printTable(
    'Cheap answers: API CPU µs per answer vs a bare node:http answer (same status, same body size), median (min–max)',
    [
      { header: 'answer', value: (r) => r.kind, align: 'left' },
      { header: 'body bytes', value: (r) => String(runs.bytes[r.kind]) },
      { header: 'side', value: (r) => r.side.name, align: 'left' },
      { header: 'API µs', value: (r) => range(r.api) },
      { header: 'node:http µs', value: (r) => range(r.bare) },
      { header: 'ratio', value: (r) => times(ratio(r.api.median, r.bare.median)) },
    ],
    rows,
  );
  const checks = rows.map((r) => {
    const x = ratio(r.api.median, r.bare.median);
    return {
      name: `${r.side.name}: ${r.kind} / node:http (CPU per answer) <= ${CHEAP_TARGET}`,
      pass: Number.isFinite(x) && x <= CHEAP_TARGET,
      detail: `${times(x)}  ${num(r.api.median)} / ${num(r.bare.median)} µs`,
    };
  });
  printChecks('Cheap answers against their target (medians)', checks);
  return checks;
}
