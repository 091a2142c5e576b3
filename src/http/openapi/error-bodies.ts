// The OpenAPI document's error answers, generated from the status table (ERROR_STATUS): a route names
// the codes it can answer, and their statuses, bodies (each code's details) and headers follow from it.
import { z } from 'zod';
import type { ZodOpenApiResponseObject, ZodOpenApiResponsesObject } from 'zod-openapi';
import type { ErrorCode } from '../../errors.ts';
import { ERROR_STATUS } from '../errors.ts';
import { isoTime, productId, requestIdHeader } from './common.ts';

const count = z.number().int().min(0);
const allow = z.string().meta({ description: 'the methods the path has', example: 'GET, HEAD' });
/** A duration in ms (not always whole: the waiting room computes it from its clock). */
const ms = z.number().min(0);
const orderId = z.string().meta({ example: 'drop-1.3.1.k5d8sq2c0a' });

/** Where a queued buyer stands: a 429 queued's body besides error and message (and a stream's `queued` event). */
export const place = {
  ticket: z.string().meta({ description: 'send it back as the Queue-Ticket header', example: 'v1.drop-1.…' }),
  position: count.meta({ description: 'buyers ahead (an estimate)', example: 120 }),
  etaMs: ms.meta({
    description: 'when the service expects to serve this buyer, ms from now',
    example: 2400,
  }),
  retryAfterMs: ms.meta({ description: 'come back after this many ms (never sooner)', example: 1000 }),
  available: count.meta({ description: 'units still on sale', example: 87 }),
};

/** The details each code's body carries besides `error` and `message` (none: just those two). */
const DETAILS: Partial<Record<ErrorCode, z.ZodRawShape>> = {
  invalid_request: {
    field: z.string().optional().meta({ description: 'the field refused', example: 'quantity' }),
  },
  unknown_product: { productId },
  unknown_order: { orderId },
  order_expired: { orderId },
  order_cancelled: { orderId },
  already_paid: { orderId },
  method_not_allowed: { allow },
  sold_out: { productId, available: z.literal(0) },
  insufficient_stock: {
    productId,
    available: count.meta({ description: 'units left: a request for at most this many can be served' }),
    quantity: count.optional().meta({ description: "the order's quantity (absent for a restock)" }),
  },
  not_started: { productId, startsAt: isoTime },
  sale_ended: { productId, endsAt: isoTime },
  limit_exceeded: { productId, limit: count },
  stock_limit_exceeded: { productId, total: count, max: count },
  queued: place,
  busy: { productId: productId.optional() },
  rate_limited: { by: z.enum(['user', 'address']) },
  unavailable: {
    productId: productId.optional(),
    withdrawnOrderId: orderId
      .optional()
      .meta({ description: 'a reservation withdrawn: it never becomes an order' }),
    stranded: count.optional().meta({ description: 'units left on a Redis master short of replicas' }),
  },
  outcome_unknown: { orderId: orderId.meta({ description: 'the id the order has if it exists: GET it' }) },
};

/** Every code of the table, and `internal` (an unexpected error, answered 500 and logged). */
export const errorCode = z
  .enum([...(Object.keys(ERROR_STATUS) as ErrorCode[]), 'internal'])
  .meta({ id: 'ErrorCode', description: 'Every error code the service answers (src/http/errors.ts).' });

/** Any error answer: what a client can rely on whatever the code. */
export const errorShape = z
  .looseObject({ error: errorCode, message: z.string() })
  .meta({ id: 'ErrorBody', description: '`{error, message, ...details}`' });

const pascal = (code: string) => code.replace(/(^|_)([a-z])/g, (_m, _s, c: string) => c.toUpperCase());

const bodies = new Map<ErrorCode, z.ZodType>();

/** The body of an answer with `code`: `{error, message, ...details}`; one component per code. */
function errorBody(code: ErrorCode): z.ZodType {
  const known = bodies.get(code);
  if (known) return known;
  const body = z
    .looseObject({ error: z.literal(code), message: z.string(), ...DETAILS[code] })
    .meta({ id: `${pascal(code)}Error`, description: `\`${code}\`: ${ERROR_STATUS[code]}` });
  bodies.set(code, body);
  return body;
}

const retryAfter = z
  .string()
  .regex(/^\d+$/)
  .meta({ description: 'whole seconds to wait before retrying', example: '2' });

/** The headers an error answer with these codes carries. */
function headersOf(status: number, codes: readonly ErrorCode[]) {
  return z.object({
    ...requestIdHeader,
    ...((status === 429 || status === 503) && { 'Retry-After': retryAfter }),
    ...(codes.includes('queued') && {
      'Queue-Ticket': place.ticket.optional().meta({ description: 'with `queued`: the ticket' }),
    }),
    ...(codes.includes('method_not_allowed') && { Allow: allow }),
  });
}

/** One status's answer for its codes: a single body, or one of several told apart by `error`. */
export function errorResponse(status: number, codes: readonly ErrorCode[]): ZodOpenApiResponseObject {
  const [first, ...rest] = codes.map(errorBody);
  const schema = rest.length === 0 ? first : z.union([first as z.ZodType, ...rest]);
  return {
    description: codes.map((c) => `\`${c}\``).join(', '),
    headers: headersOf(status, codes),
    content: { 'application/json': { schema } },
  };
}

/** The error answers of a route that can answer `codes`, by status (the table's). */
export function errorResponses(codes: readonly ErrorCode[]): ZodOpenApiResponsesObject {
  const byStatus = new Map<number, ErrorCode[]>();
  for (const code of new Set(codes)) {
    const status = ERROR_STATUS[code];
    byStatus.set(status, [...(byStatus.get(status) ?? []), code]);
  }
  const responses: ZodOpenApiResponsesObject = {};
  for (const [status, group] of [...byStatus].sort(([a], [b]) => a - b)) {
    responses[`${status}` as `4${string}`] = errorResponse(status, group);
  }
  return responses;
}

/** Codes of any request the service cannot read: a malformed head or path, too slow, headers too large. */
export const TRANSPORT_CODES: readonly ErrorCode[] = [
  'invalid_request',
  'non_canonical_path',
  'request_timeout',
  'headers_too_large',
];

/** Codes of a request whose body the service reads (JSON, up to 16 kB, UTF-8, optionally compressed). */
export const BODY_CODES: readonly ErrorCode[] = [
  ...TRANSPORT_CODES,
  'body_timeout',
  'invalid_encoding',
  'payload_too_large',
  'unsupported_media_type',
];
