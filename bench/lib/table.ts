// Plain-text tables and number formatting for benchmark reports (no colours: output goes to logs),
// and the PASS/MISS table of figures against their targets.

export interface Column<Row> {
  header: string;
  /** Cell text for a row. */
  value: (row: Row) => string;
  /** Numbers read best right-aligned (the default); labels left-aligned. */
  align?: 'left' | 'right';
}

/** Renders rows as an aligned table with a header rule; returns the text (no trailing newline). */
export function renderTable<Row>(columns: Column<Row>[], rows: Row[]): string {
  const cells = rows.map((row) => columns.map((c) => c.value(row)));
  const widths = columns.map((c, i) => Math.max(c.header.length, ...cells.map((r) => (r[i] ?? '').length)));
  const line = (values: string[]) =>
    values
      .map((v, i) => {
        const w = widths[i] ?? 0;
        return columns[i]?.align === 'left' ? v.padEnd(w) : v.padStart(w);
      })
      .join('  ')
      .trimEnd();
  const header = line(columns.map((c) => c.header));
  const rule = widths.map((w) => '-'.repeat(w)).join('  ');
  return [header, rule, ...cells.map(line)].join('\n');
}

export function printTable<Row>(title: string, columns: Column<Row>[], rows: Row[]): void {
  console.log(`\n${title}\n${renderTable(columns, rows)}`);
}

/** Fixed decimals, with thousands separators for large values; '-' for NaN/undefined. */
export function num(v: number | undefined, decimals = 0): string {
  if (v === undefined || Number.isNaN(v)) return '-';
  if (!Number.isFinite(v)) return v > 0 ? 'inf' : '-inf';
  return v.toLocaleString('en-US', { minimumFractionDigits: decimals, maximumFractionDigits: decimals });
}

/** Milliseconds with a precision that suits the magnitude. */
export function ms(v: number | undefined): string {
  if (v === undefined || Number.isNaN(v)) return '-';
  if (v < 1) return v.toFixed(3);
  if (v < 10) return v.toFixed(2);
  if (v < 100) return v.toFixed(1);
  return num(v, 0);
}

/** A ratio such as "12.3x"; '-' when undefined. */
export function times(v: number | undefined, decimals = 2): string {
  if (v === undefined || Number.isNaN(v)) return '-';
  if (!Number.isFinite(v)) return 'inf';
  return `${v.toFixed(decimals)}x`;
}

export interface Check {
  name: string;
  pass: boolean;
  detail: string;
}

export function mark(pass: boolean): string {
  return pass ? 'PASS' : 'MISS';
}

export function printChecks(title: string, checks: Check[]): void {
  printTable(
    title,
    [
      { header: '', value: (c: Check) => mark(c.pass), align: 'left' },
      { header: 'target', value: (c: Check) => c.name, align: 'left' },
      { header: 'measured', value: (c: Check) => c.detail, align: 'left' },
    ],
    checks,
  );
}
