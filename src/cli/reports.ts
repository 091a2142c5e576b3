// The commands that read a sale: status (its settings, units by state adding up to the total, orders
// by fate, shards, last change) and reconcile (exit 1 listing each difference when the books differ).

import { type Context, type Json, request } from './client.ts';
import { printJson, table } from './output.ts';

export async function status(ctx: Context, productId: string): Promise<number> {
  const { body: r } = await request(ctx, 'GET', `/admin/products/${productId}`);
  if (ctx.json) return printJson(ctx.io, r);
  const shards = Array.isArray(r.shards) ? (r.shards as Json[]) : [];
  // total == available + returning + sold, and sold == reserved + confirmed + paid (DESIGN.md §5).
  const lines = [
    ['product', String(r.productId ?? productId)],
    ['generation', String(r.generation)],
    ['last change', lastChange(r)],
    ['total', String(r.total)],
    ['available', String(r.available)],
    ['returning', String(r.returning)],
    ['sold', `${r.sold} (reserved ${r.reserved} + confirmed ${r.confirmed} + paid ${r.paid})`],
    ['orders', orderFates(r)],
    ...settingLines(r),
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

/** The sale's settings as GET /admin/products/:id shows them, each named even when not set. */
function settingLines(r: Json): string[][] {
  const lottery = ((r.queue ?? {}) as Json).lottery as Json | undefined;
  return [
    ['opens', r.startsAt === undefined ? 'at once (no start time)' : String(r.startsAt)],
    ['closes', r.endsAt === undefined ? 'never (no end time)' : String(r.endsAt)],
    [
      'payment timeout',
      r.paymentTimeoutSec === undefined ? 'none (no payment needed)' : `${r.paymentTimeoutSec} s`,
    ],
    ['per-user limit', r.perUserLimit == null ? 'none' : String(r.perUserLimit)],
    [
      'lottery',
      lottery
        ? `first ${lottery.lotterySeconds} s, drawn at ${lottery.closesAt}`
        : 'none (first come, first served)',
    ],
  ];
}

/** Orders awaiting payment and by fate: what became of the orders accepted. */
function orderFates(r: Json): string {
  const o = (r.orders ?? {}) as Json;
  return `awaiting payment ${r.awaitingPayment ?? 0}, paid ${o.paid ?? 0}, expired ${o.expired ?? 0}, cancelled ${o.cancelled ?? 0}`;
}

/** The newest generation change: "resharded (generation 3, 4 shards) by the service's … at <ISO>". */
function lastChange(r: Json): string {
  const last = (Array.isArray(r.changes) ? (r.changes as Json[]) : [])[0];
  if (!last) return 'none recorded';
  const shards = `${last.shards} shard${last.shards === 1 ? '' : 's'}`;
  const by = CAUSES[String(last.by)] ?? String(last.by);
  return `${last.kind} (generation ${last.generation}, ${shards}) by ${by} at ${last.at}`;
}

const CAUSES: Record<string, string> = {
  admin: 'an admin',
  consolidation: "the service's sold-out consolidation",
  returns: 'expired/cancelled units coming back',
};

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
