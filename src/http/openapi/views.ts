// The success bodies of the buyer's routes as zod schemas, for the OpenAPI document: what the route
// handlers build (src/http/routes/orders.ts, products.ts, order-views.ts), checked by the contract test.
import { z } from 'zod';
import { epochMs, isoTime, orderId, productId, userId } from './common.ts';
import { place } from './error-bodies.ts';

const count = z.number().int().min(0);
const quantity = z.number().int().min(1).meta({ example: 1 });
const orderStatus = z.enum(['reserved', 'confirmed', 'paid', 'expired', 'cancelled']).meta({
  id: 'OrderStatus',
  description: 'reserved (in Redis) → confirmed (in Postgres) → paid; or expired / cancelled',
});

export const placedOrder = z
  .object({ orderId, status: z.literal('reserved'), productId, userId, quantity })
  .meta({ id: 'PlacedOrder', description: 'The units are sold to this buyer.' });

const payBy = epochMs
  .optional()
  .meta({ description: 'the payment deadline (epoch ms, Redis clock), for a sale that needs payment' });

/** The buyer's view; the admin's adds the internals (where the units came from). */
export const orderView = z
  .looseObject({
    orderId,
    status: orderStatus,
    productId,
    userId,
    quantity,
    payBy,
    paymentDueAt: isoTime.optional().meta({ description: 'the payment deadline (Redis clock), as ISO 8601' }),
    shardKey: z.string().optional().meta({ description: 'admin only' }),
    generation: count.optional().meta({ description: 'admin only' }),
    shardIndex: count.optional().meta({ description: 'admin only' }),
    token: count.optional().meta({ description: 'admin only: the fencing token of the decrement' }),
    reservedAt: epochMs.optional().meta({ description: 'admin only' }),
    perUserLimit: count.optional().meta({ description: 'admin only' }),
  })
  .meta({ id: 'OrderView' });

export const fateAnswer = (status: 'paid' | 'cancelled') =>
  z
    .object({ orderId, status: z.literal(status) })
    .meta({ id: status === 'paid' ? 'PaidOrder' : 'CancelledOrder' });

const drawView = z.object({
  lotterySeconds: count,
  seedSha256: z.string().meta({ description: "SHA-256 of the draw's seed, published before the sale opens" }),
  closesAt: isoTime,
  seed: z.string().optional().meta({ description: 'the seed itself, once the lottery window has closed' }),
});

export const productView = z
  .object({
    productId,
    available: count.meta({ example: 87 }),
    soldOut: z.boolean(),
    queue: z
      .object({
        waiting: count,
        servingLagMs: z
          .number()
          .min(0)
          .nullable()
          .meta({ description: 'how far behind now the line serves; null before anyone is let in' }),
        lottery: drawView.optional(),
      })
      .optional()
      .meta({ description: 'while buyers wait in the waiting room' }),
    startsAt: isoTime.optional(),
    endsAt: isoTime.optional(),
    paymentTimeoutSec: z.number().int().min(1).optional(),
  })
  .meta({ id: 'ProductView' });

/** The streaming answer's events (DESIGN.md §4): `queued` while the buyer waits, then one `result`. */
export const streamEvents = {
  queued: z
    .object({
      ticket: place.ticket,
      position: place.position,
      etaMs: place.etaMs,
      available: place.available,
    })
    .meta({
      id: 'QueuedEvent',
      description:
        '`event: queued`: where the buyer stands (at once, then on a change that matters, at most ~1/s)',
    }),
  result: z
    .object({
      status: z
        .number()
        .int()
        .meta({ description: 'the HTTP status the JSON answer would have had', example: 202 }),
      body: z
        .record(z.string(), z.unknown())
        .meta({ description: 'that JSON answer (a PlacedOrder, or an error body)' }),
    })
    .meta({ id: 'ResultEvent', description: '`event: result`: the outcome; then the stream ends' }),
};
