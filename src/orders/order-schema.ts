// Runtime check of an OrderRecord arriving from Redis (job data, reservation JSON): whatever passes
// is guaranteed to insert, so one bad record can never wedge a batch.
import { z } from 'zod';
import { PRODUCT_ID_PATTERN } from '../inventory/keys.ts';
import type { OrderRecord } from './order.ts';

const INT32_MAX = 2_147_483_647;
// Postgres text cannot hold NUL; anything else is fine.
const text = (max: number) =>
  z
    .string()
    .min(1)
    .max(max)
    .refine((s) => !s.includes('\u0000'), 'must not contain NUL characters');
const int32 = z.number().int().min(0).max(INT32_MAX);

const orderRecordSchema = z.object({
  orderId: text(200),
  productId: z.string().regex(PRODUCT_ID_PATTERN),
  userId: text(200),
  quantity: int32.min(1),
  shardKey: text(300),
  generation: int32,
  shardIndex: int32,
  token: z.number().int().min(0).max(Number.MAX_SAFE_INTEGER),
  // timestamptz range is far wider; this just rejects nonsense (before 2000, after 2200).
  reservedAt: z.number().int().min(946_684_800_000).max(7_258_118_400_000),
  perUserLimit: int32.optional(),
  payBy: z.number().int().min(946_684_800_000).max(7_258_118_400_000).optional(),
}) satisfies z.ZodType<OrderRecord>;

/** One line naming each offending field, e.g. `quantity: Invalid input: expected number, received string`. */
function describeIssues(error: z.ZodError): string {
  return error.issues
    .map((i) => `${i.path.length > 0 ? i.path.join('.') : '(root)'}: ${i.message}`)
    .join('; ');
}

export type ParsedOrder = { ok: true; record: OrderRecord } | { ok: false; reason: string };

export function parseOrderRecord(data: unknown): ParsedOrder {
  const result = orderRecordSchema.safeParse(data);
  return result.success
    ? { ok: true, record: result.data }
    : { ok: false, reason: describeIssues(result.error) };
}
