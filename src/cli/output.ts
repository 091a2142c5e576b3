// The CLI's text output: aligned tables, the service's JSON as is (--json), one-line error messages.

import type { CliIo, Json } from './client.ts';

/** Prints the service's answer as JSON (--json); returns exit status 0. */
export function printJson(io: CliIo, body: Json): number {
  io.out(`${JSON.stringify(body, null, 2)}\n`);
  return 0;
}

/** Rows as columns aligned on their widest cell (the last column not padded). */
export function table(rows: string[][]): string {
  const widths: number[] = [];
  for (const row of rows) {
    for (const [i, cell] of row.entries()) widths[i] = Math.max(widths[i] ?? 0, cell.length);
  }
  return rows
    .map((row) =>
      row.map((cell, i) => (i === row.length - 1 ? cell : cell.padEnd(widths[i] ?? 0))).join('  '),
    )
    .join('\n');
}

export function oneLine(s: string): string {
  return s.replace(/\s+/g, ' ').trim();
}
