// Small, dependency-free statistics for benchmarks: percentiles and summaries over raw samples,
// ratios, counts summed, and the median and range of repeated figures.

export interface Summary {
  count: number;
  mean: number;
  p50: number;
  p90: number;
  p99: number;
  max: number;
  min: number;
}

/** Nearest-rank percentile of an ascending-sorted array (p in 0..100); NaN when empty. */
export function percentile(sorted: ArrayLike<number>, p: number): number {
  if (sorted.length === 0) return Number.NaN;
  const rank = Math.ceil((p / 100) * sorted.length);
  return sorted[Math.min(sorted.length - 1, Math.max(0, rank - 1))] as number;
}

/** Summary of a set of samples; the input is not modified. */
export function summarize(values: ArrayLike<number>): Summary {
  const sorted = Float64Array.from(values as ArrayLike<number>).sort();
  const count = sorted.length;
  let sum = 0;
  for (const v of sorted) sum += v;
  return {
    count,
    mean: count ? sum / count : Number.NaN,
    p50: percentile(sorted, 50),
    p90: percentile(sorted, 90),
    p99: percentile(sorted, 99),
    max: count ? (sorted[count - 1] as number) : Number.NaN,
    min: count ? (sorted[0] as number) : Number.NaN,
  };
}

/** a / b, or NaN when b is 0 or either is not finite. */
export function ratio(a: number, b: number): number {
  if (!Number.isFinite(a) || !Number.isFinite(b) || b === 0) return Number.NaN;
  return a / b;
}

/** Merges per-key counters: { k: n } + { k: m }. */
export function addCounts(
  into: Record<string, number>,
  from: Record<string, number>,
): Record<string, number> {
  for (const [k, v] of Object.entries(from)) into[k] = (into[k] ?? 0) + v;
  return into;
}

export function sumValues(counts: Record<string, number>): number {
  let total = 0;
  for (const v of Object.values(counts)) total += v;
  return total;
}

/** The median of repeated figures (lower middle for an even count) and their range; NaNs left out. */
export interface Spread {
  median: number;
  min: number;
  max: number;
  n: number;
}

export function spreadOf(values: readonly number[]): Spread {
  const xs = values.filter(Number.isFinite).sort((a, b) => a - b);
  if (xs.length === 0) return { median: Number.NaN, min: Number.NaN, max: Number.NaN, n: 0 };
  return {
    median: xs[Math.floor((xs.length - 1) / 2)] as number,
    min: xs[0] as number,
    max: xs[xs.length - 1] as number,
    n: xs.length,
  };
}
