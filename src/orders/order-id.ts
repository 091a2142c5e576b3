// Order ids name their shard and the attempt that made them: `<product>.<generation>.<shard>.<ticket>`.
// The shard part lets status find a reservation without an index; the ticket part lets an attempt
// whose reply was lost be looked up on every shard it may have used (see attempt.ts).
// Dots separate the parts: product ids cannot contain one, and BullMQ job ids must not contain ':'.
import { PRODUCT_ID_PATTERN } from '../inventory/keys.ts';

const ORDER_ID = /^([A-Za-z0-9_-]{1,64})\.(\d{1,15})\.(\d{1,4})\.([0-9a-f]{24})$/;
const STOCK_KEY = /^stock:\{([A-Za-z0-9_-]{1,64}):(\d{1,15}):(\d{1,4})\}$/;

export function orderIdFor(productId: string, generation: number, index: number, ticket: string): string {
  return `${productId}.${generation}.${index}.${ticket}`;
}

export function parseOrderId(
  orderId: string,
): { productId: string; generation: number; index: number; ticket: string } | null {
  const m = ORDER_ID.exec(orderId);
  if (!m?.[1] || !PRODUCT_ID_PATTERN.test(m[1])) return null;
  return { productId: m[1], generation: Number(m[2]), index: Number(m[3]), ticket: m[4] as string };
}

/** The id the attempt `ticket` would have given an order on the shard `stockKey`; null for a foreign key. */
export function orderIdOnShard(stockKey: string, ticket: string): string | null {
  const m = STOCK_KEY.exec(stockKey);
  return m?.[1] ? orderIdFor(m[1], Number(m[2]), Number(m[3]), ticket) : null;
}
