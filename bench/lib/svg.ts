// A small SVG chart of the benchmark (`npm run bench` writes .bench/orders.svg): per scenario, one bar
// of orders/s and one of p99 latency, side by side. Hand-rolled: two bar panels need no library.

export interface BarRow {
  key: string;
  label: string;
  perSecond: number;
  p99Ms: number;
}

const ROW = 22;
const LABEL_W = 330;
const PANEL_W = 280;
const GAP = 40;
const TOP = 52;

const esc = (s: string) => s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
const fmt = (v: number, digits: number) =>
  Number.isFinite(v) ? v.toLocaleString('en-US', { maximumFractionDigits: digits }) : '-';

function panel(
  rows: BarRow[],
  x0: number,
  value: (r: BarRow) => number,
  color: string,
  unit: string,
): string {
  const max = Math.max(1e-9, ...rows.map((r) => (Number.isFinite(value(r)) ? value(r) : 0)));
  return rows
    .map((r, i) => {
      const v = Number.isFinite(value(r)) ? value(r) : 0;
      const y = TOP + i * ROW;
      const w = (v / max) * PANEL_W;
      return (
        `<rect x="${x0}" y="${y + 4}" width="${w.toFixed(1)}" height="${ROW - 8}" fill="${color}"/>` +
        `<text x="${(x0 + w + 4).toFixed(1)}" y="${y + ROW / 2 + 4}">${fmt(value(r), unit === 'ms' ? 1 : 0)} ${unit}</text>`
      );
    })
    .join('\n');
}

export function barChartSvg(title: string, subtitle: string, rows: BarRow[]): string {
  const x1 = LABEL_W;
  const x2 = LABEL_W + PANEL_W + 80 + GAP;
  const width = x2 + PANEL_W + 90;
  const height = TOP + rows.length * ROW + 16;
  const labels = rows
    .map((r, i) => `<text x="8" y="${TOP + i * ROW + ROW / 2 + 4}">${esc(`${r.key}  ${r.label}`)}</text>`)
    .join('\n');
  return `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}" font-family="sans-serif" font-size="12">
<title>${esc(title)}</title>
<rect width="100%" height="100%" fill="#fff"/>
<text x="8" y="18" font-size="15" font-weight="bold">${esc(title)}</text>
<text x="8" y="34" fill="#555">${esc(subtitle)}</text>
<text x="${x1}" y="${TOP - 4}" font-weight="bold">orders/s</text>
<text x="${x2}" y="${TOP - 4}" font-weight="bold">p99 latency</text>
${labels}
${panel(rows, x1, (r) => r.perSecond, '#2e9d5b', '/s')}
${panel(rows, x2, (r) => r.p99Ms, '#d64545', 'ms')}
</svg>
`;
}
