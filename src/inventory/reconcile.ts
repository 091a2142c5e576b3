// The reconcile of a sale's status: DESIGN.md §5's conservation with returned units, available +
// returning + sold == total and sold == reserved + confirmed + paid, each difference spelled out.
import type { SaleStatus } from './status.ts';

export interface Difference {
  check: string;
  expected: number;
  found: number;
  detail: string;
}

export function reconcile(status: SaleStatus): { ok: boolean; differences: Difference[] } {
  const differences: Difference[] = [];
  const { available, returning, sold, total, reserved, confirmed, paid } = status;
  if (available + returning + sold !== total) {
    const found = available + returning + sold;
    differences.push({
      check: 'available + returning + sold == total',
      expected: total,
      found,
      detail: `available ${available} + returning ${returning} + sold ${sold} = ${found}, total ${total}`,
    });
  }
  if (sold !== reserved + confirmed + paid) {
    const found = reserved + confirmed + paid;
    differences.push({
      check: 'sold == reserved + confirmed + paid',
      expected: sold,
      found,
      detail: `reserved ${reserved} + confirmed ${confirmed} + paid ${paid} = ${found}, sold ${sold}`,
    });
  }
  if (returning < 0) {
    differences.push({
      check: 'returning >= 0',
      expected: 0,
      found: returning,
      detail: `returning ${returning}`,
    });
  }
  for (const s of status.shards) {
    if (s.stock < 0) {
      differences.push({
        check: 'shard stock >= 0',
        expected: 0,
        found: s.stock,
        detail: `${s.key} holds ${s.stock}`,
      });
    }
  }
  return { ok: differences.length === 0, differences };
}
