// How the order bench states a figure against its target (`>= 0.90`, PASS/MISS) and a figure it only
// reports, in the rows printChecks and the "Reported (no target)" tables print.
import { type Check, printTable, times } from '../lib/table.ts';

/** A ratio that must reach `target`. */
export function atLeast(name: string, value: number, target: number, detail: string): Check {
  return {
    name: `${name} >= ${target.toFixed(2)}`,
    pass: Number.isFinite(value) && value >= target,
    detail: `${times(value, 3)}  ${detail}`,
  };
}

/** A ratio reported without a target. */
export function info(name: string, value: number, detail: string): Check {
  return { name, pass: true, detail: `${times(value)}  ${detail}` };
}

/** The figures a phase reports without a target, as a two-column table. */
export function printReported(title: string, rows: Check[]): void {
  printTable(
    title,
    [
      { header: 'ratio', value: (c: Check) => c.name, align: 'left' },
      { header: 'measured', value: (c: Check) => c.detail, align: 'left' },
    ],
    rows,
  );
}
