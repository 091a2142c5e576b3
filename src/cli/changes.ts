// The commands that change a sale: sale put, restock and reshard, each one admin call printed as one
// line (or the service's JSON with --json).

import { type Context, type Json, request } from './client.ts';
import { printJson } from './output.ts';

export async function salePut(ctx: Context, productId: string, body: Json): Promise<number> {
  const { status, body: r } = await request(ctx, 'PUT', `/admin/products/${productId}`, body);
  if (ctx.json) return printJson(ctx.io, r);
  const verb = status === 201 ? 'created' : 'replaced';
  const limit = r.perUserLimit == null ? 'none' : String(r.perUserLimit);
  ctx.io.out(
    `${verb} sale "${productId}": total ${r.total}, available ${r.available}, ${r.shards} shards, ` +
      `generation ${r.generation}, per-user limit ${limit}${saleTerms(r)}\n`,
  );
  return 0;
}

/** The window, payment and queue terms the service confirmed, as ", starts …, ends …" (or nothing). */
function saleTerms(r: Json): string {
  const queue = (r.queue ?? {}) as Json;
  const terms = [
    r.startsAt !== undefined && `starts ${r.startsAt}`,
    r.endsAt !== undefined && `ends ${r.endsAt}`,
    r.paymentTimeoutSec !== undefined && `payment within ${r.paymentTimeoutSec} s`,
    queue.lotterySeconds !== undefined && `lottery ${queue.lotterySeconds} s`,
  ].filter((t) => t !== false);
  return terms.map((t) => `, ${t}`).join('');
}

export async function restock(ctx: Context, productId: string, delta: number): Promise<number> {
  const { body: r } = await request(ctx, 'POST', `/admin/products/${productId}/restock`, { delta });
  if (ctx.json) return printJson(ctx.io, r);
  const signed = delta >= 0 ? `+${delta}` : String(delta);
  ctx.io.out(
    `restocked "${productId}" by ${signed}: total ${r.total}, available ${r.available}, generation ${r.generation}\n`,
  );
  return 0;
}

export async function reshard(ctx: Context, productId: string, shards: number): Promise<number> {
  const started = performance.now();
  const { body: r } = await request(ctx, 'POST', `/admin/products/${productId}/reshard`, { shards });
  if (ctx.json) return printJson(ctx.io, r);
  const ms = Math.round(performance.now() - started);
  ctx.io.out(
    `resharded "${productId}" to ${r.shards} shards: generation ${r.generation}, available ${r.available} (${ms} ms)\n`,
  );
  return 0;
}
