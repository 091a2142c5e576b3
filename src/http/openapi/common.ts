// Schemas the OpenAPI document's routes share: the path parameters (the request validators' own,
// with examples), times as the answers show them, and the X-Request-Id every answer echoes.
import { z } from 'zod';
import { productId as productIdParam } from '../validation.ts';

export const productId = productIdParam.meta({ description: 'the product on sale', example: 'drop-1' });
export const userId = z.string().meta({ description: 'the buyer', example: 'alice' });
export const orderId = z.string().meta({ description: "the order's id", example: 'drop-1.3.1.k5d8sq2c0a' });
/** A time as answers show it: ISO 8601 in UTC. */
export const isoTime = z.iso.datetime({ offset: true }).meta({ example: '2026-12-01T20:00:00.000Z' });
/** A time in Redis' clock, epoch ms. */
export const epochMs = z.number().int().min(0).meta({ example: 1_796_241_600_000 });

/** Every answer echoes the caller's X-Request-Id when it is sane, else a fresh UUID. */
export const requestIdHeader = {
  'X-Request-Id': z.string().optional().meta({ description: "the request's id in the service's logs" }),
};

export const productPath = z.object({ productId });
export const orderPath = z.object({ orderId });

/** A JSON answer with this body (and X-Request-Id, and these headers). */
export function json(description: string, schema: z.ZodType, headers: z.ZodRawShape = {}) {
  return {
    description,
    headers: z.object({ ...requestIdHeader, ...headers }),
    content: { 'application/json': { schema } },
  };
}
