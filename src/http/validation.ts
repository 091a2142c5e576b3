// Request schemas (zod). Numbers must be JSON numbers: "8" or 2.5 or 1e30 are refused, not coerced.
import { z } from 'zod';
import { PRODUCT_ID_PATTERN } from '../inventory/keys.ts';
import { MAX_STOCK } from '../inventory/sale.ts';
import { invalid } from './errors.ts';

export const productId = z.string().regex(PRODUCT_ID_PATTERN, 'must match ^[A-Za-z0-9_-]{1,64}$');
/** User ids go into a hash tag ({P:userId}), so braces and spaces are excluded. */
export const userId = z
  .string()
  .regex(/^[A-Za-z0-9_.:@-]{1,128}$/, 'must be 1-128 characters of [A-Za-z0-9_.:@-]');
/** A whole number in min..max; a bad one is told the range in words (`must be an integer from 1 to 1024`). */
const count = (min: number, max: number) => {
  const error = `must be an integer from ${min} to ${max}`;
  return z.number({ error }).int({ error }).min(min, { error }).max(max, { error });
};
/** An admin change's free-text note, kept in its audit row: no control characters (Postgres refuses NUL). */
const note = z
  .string()
  .max(500)
  .regex(/^[^\p{Cc}]*$/u, 'must not contain control characters')
  .optional();

export const orderBody = (maxQuantity: number) =>
  z.object({ productId, userId, quantity: count(1, maxQuantity).default(1) });

/** A week: a payment window longer than a sale is surely a mistake. */
const MAX_PAYMENT_TIMEOUT_SEC = 7 * 24 * 60 * 60;
export const MAX_SHARDS = 1024;
const MAX_LOTTERY_SECONDS = 3600;

/** An ISO 8601 time with a zone (`Z` or an offset), as epoch ms. */
const isoTime = z.iso.datetime({ offset: true }).transform((s) => Date.parse(s));

export const saleBody = z
  .object({
    stock: count(0, MAX_STOCK),
    shards: count(1, MAX_SHARDS),
    perUserLimit: count(0, MAX_STOCK).nullable().optional(),
    startsAt: isoTime.nullable().optional(),
    endsAt: isoTime.nullable().optional(),
    /** Seconds an accepted order has to be paid before it expires (0 or absent: no payment needed). */
    paymentTimeoutSec: count(0, MAX_PAYMENT_TIMEOUT_SEC).nullable().optional(),
    /** The waiting room: a lottery over the buyers of the sale's first `lotterySeconds` (at most an hour). */
    queue: z
      .object({ lotterySeconds: count(0, MAX_LOTTERY_SECONDS).optional() })
      .strict()
      .nullable()
      .optional(),
    note,
  })
  .refine((s) => s.startsAt == null || s.endsAt == null || s.startsAt < s.endsAt, {
    message: 'must be after startsAt',
    path: ['endsAt'],
  });
/** POST /api/orders/:orderId/pay and /cancel: the buyer asking. */
export const fateBody = z.object({ userId });
export const restockBody = z.object({ delta: count(-MAX_STOCK, MAX_STOCK), note });
export const reshardBody = z.object({ shards: count(1, MAX_SHARDS), note });

/** Idempotency keys go into a hash tag too. */
export const idempotencyKeyHeader = z
  .string()
  .regex(/^[A-Za-z0-9_.:@-]{1,200}$/, 'must be 1-200 characters of [A-Za-z0-9_.:@-]');

export function parse<T>(schema: z.ZodType<T>, value: unknown, what = 'body'): T {
  const r = schema.safeParse(value);
  if (r.success) return r.data;
  const issue = r.error.issues[0];
  const field = issue && issue.path.length > 0 ? issue.path.join('.') : what;
  throw invalid(`${field}: ${issue?.message ?? 'invalid'}`, { field });
}
