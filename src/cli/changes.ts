// The commands that change a sale: sale put, restock and reshard, each one admin call printed as one
// line (or the service's JSON with --json).

import { CliError } from './cli-error.ts';
import { type Context, type Json, request } from './client.ts';
import { printJson } from './output.ts';

/** The flag of each sale field, so that a refusal from the service names what the operator typed. */
const FLAG_OF: Record<string, string> = {
  stock: '--stock',
  shards: '--shards',
  perUserLimit: '--per-user-limit',
  startsAt: '--starts-at',
  endsAt: '--ends-at',
  paymentTimeoutSec: '--payment-timeout',
  'queue.lotterySeconds': '--lottery-seconds',
};
const FIELD_NAMES =
  /\b(queue\.lotterySeconds|perUserLimit|startsAt|endsAt|paymentTimeoutSec|stock|shards)(?=:| |$)/g;

/** The PUT of a sale; a refusal of one of its fields is told with the flags' names. */
async function putSale(ctx: Context, productId: string, body: Json) {
  try {
    return await request(ctx, 'PUT', `/admin/products/${productId}`, body);
  } catch (err) {
    if (!(err instanceof CliError) || err.field === undefined || !(err.field in FLAG_OF)) throw err;
    const message = err.message.replace(FIELD_NAMES, (f) => FLAG_OF[f] ?? f);
    throw new CliError(err.code, message, err.field);
  }
}

export async function salePut(ctx: Context, productId: string, body: Json): Promise<number> {
  const { status, body: r } = await putSale(ctx, productId, body);
  if (ctx.json) return printJson(ctx.io, r);
  const verb = status === 201 ? 'created' : 'replaced';
  // 0 and null both mean no limit (the service's answers have used either).
  const limit = Number(r.perUserLimit ?? 0) > 0 ? String(r.perUserLimit) : 'none';
  ctx.io.out(
    `${verb} sale "${productId}": total ${r.total}, available ${r.available}, ${r.shards} shards, ` +
      `generation ${r.generation}, per-user limit ${limit}${saleTerms(r, body)}\n`,
  );
  return 0;
}

/**
 * The window, payment and lottery terms the service confirmed, as ", starts …, ends …" (or nothing);
 * a lottery asked for and not confirmed is said so, not left out.
 */
function saleTerms(r: Json, sent: Json): string {
  const lottery = ((r.queue ?? {}) as Json).lottery as Json | undefined;
  const asked = Number(((sent.queue ?? {}) as Json).lotterySeconds ?? 0);
  const terms = [
    r.startsAt !== undefined && `starts ${r.startsAt}`,
    r.endsAt !== undefined && `ends ${r.endsAt}`,
    r.paymentTimeoutSec !== undefined && `payment within ${r.paymentTimeoutSec} s`,
    lottery !== undefined &&
      `lottery ${lottery.lotterySeconds} s (drawn at ${lottery.closesAt}, seed SHA-256 ${String(lottery.seedSha256).slice(0, 12)}…)`,
    lottery === undefined && asked > 0 && "no lottery (the service's waiting room is off)",
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
