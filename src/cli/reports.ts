// The commands that read a sale: status (the units by state, adding up to the total, and each shard)
// and reconcile (exit 1 with each difference listed when the books do not balance).

import { type Context, type Json, request } from './client.ts';
import { printJson, table } from './output.ts';

export async function status(ctx: Context, productId: string): Promise<number> {
  const { body: r } = await request(ctx, 'GET', `/admin/products/${productId}`);
  if (ctx.json) return printJson(ctx.io, r);
  const shards = Array.isArray(r.shards) ? (r.shards as Json[]) : [];
  const limit = Number(r.perUserLimit ?? 0) > 0 ? String(r.perUserLimit) : 'none';
  // total == available + returning + sold, and sold == reserved + confirmed + paid (DESIGN.md §5).
  const lines = [
    ['product', String(r.productId ?? productId)],
    ['generation', String(r.generation)],
    ['total', String(r.total)],
    ['available', String(r.available)],
    ['returning', String(r.returning)],
    ['sold', `${r.sold} (reserved ${r.reserved} + confirmed ${r.confirmed} + paid ${r.paid})`],
    ['per-user limit', limit],
    ['shards', String(shards.length)],
  ];
  ctx.io.out(`${table(lines)}\n\n`);
  ctx.io.out(
    `${table([
      ['index', 'key', 'stock', 'sold'],
      ...shards.map((s) => [String(s.index), String(s.key), String(s.stock), String(s.sold ?? '')]),
    ])}\n`,
  );
  return 0;
}

export async function reconcile(ctx: Context, productId: string): Promise<number> {
  const { body: r } = await request(ctx, 'GET', `/admin/products/${productId}/reconcile`);
  const ok = r.ok === true;
  if (ctx.json) {
    printJson(ctx.io, r);
    return ok ? 0 : 1;
  }
  const { available, returning, sold, total, reserved, confirmed, paid } = r;
  if (ok) {
    ctx.io.out(
      `ok "${productId}": available ${available} + returning ${returning} + sold ${sold} == total ${total}; ` +
        `sold ${sold} == reserved ${reserved} + confirmed ${confirmed} + paid ${paid}\n`,
    );
    return 0;
  }
  const differences = Array.isArray(r.differences) ? (r.differences as Json[]) : [];
  ctx.io.out(`DIFFERENCES in "${productId}" (${differences.length}):\n`);
  for (const d of differences) {
    const off = Number(d.found) - Number(d.expected);
    ctx.io.out(
      `  ${d.check}: expected ${d.expected}, found ${d.found} (${off > 0 ? '+' : ''}${off}): ${d.detail}\n`,
    );
  }
  return 1;
}
