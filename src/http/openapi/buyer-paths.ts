// The buyer's routes in the OpenAPI document: place an order (JSON, or a stream while waiting), read
// it, pay or cancel it, and the product's view. Request schemas are the validators' own (validation.ts).
import { z } from 'zod';
import type { ZodOpenApiOperationObject, ZodOpenApiPathsObject } from 'zod-openapi';
import { DEFAULT_MAX_ORDER_QUANTITY } from '../../config/sections.ts';
import type { ErrorCode } from '../../errors.ts';
import { fateBody, idempotencyKeyHeader, orderBody } from '../validation.ts';
import { json, orderPath, productPath } from './common.ts';
import { BODY_CODES, errorResponses, TRANSPORT_CODES } from './error-bodies.ts';
import { fateAnswer, orderView, placedOrder, productView, streamEvents } from './views.ts';

/** Who the buyer is, as the deployment says (BUYER_AUTH): a JWT, a proxy's header, or the body's userId. */
const BUYER_SECURITY: Record<string, string[]>[] = [{ buyerJwt: [] }, { buyerHeader: [] }, {}];

const ORDER_CODES: ErrorCode[] = [
  ...BODY_CODES,
  'invalid_ticket',
  'unauthenticated',
  'buyer_mismatch',
  'unknown_product',
  'sold_out',
  'insufficient_stock',
  'limit_exceeded',
  'not_started',
  'sale_ended',
  'request_in_progress',
  'idempotency_key_reused',
  'queued',
  'busy',
  'rate_limited',
  'unavailable',
  'outcome_unknown',
];

const STREAM_EXAMPLE = [
  'event: queued',
  'data: {"ticket":"v1.drop-1.…","position":120,"etaMs":2400,"available":87}',
  '',
  ': keep-alive',
  '',
  'event: result',
  'data: {"status":202,"body":{"orderId":"drop-1.3.1.k5d8sq2c0a","status":"reserved","productId":"drop-1","userId":"alice","quantity":1}}',
  '',
].join('\n');

const placeOrder: ZodOpenApiOperationObject = {
  operationId: 'placeOrder',
  tags: ['orders'],
  summary: 'Order units of a product',
  description:
    'A 202 means the units are sold to this buyer; every 4xx and a 503 `unavailable` mean nothing was sold. ' +
    'A replayed Idempotency-Key (or Queue-Ticket) answers the first answer again. ' +
    'With `Accept: text/event-stream`, a buyer who must wait gets one 200 stream instead of polling ' +
    '(events `queued`, then `result`: see QueuedEvent and ResultEvent); an order decided at once answers as without it.',
  security: BUYER_SECURITY,
  requestParams: {
    header: z.object({
      'Idempotency-Key': idempotencyKeyHeader.optional().meta({
        description: 'retries with the same key and body answer the same, for 24 h',
        example: 'c0ffee-1',
      }),
      'Queue-Ticket': z
        .string()
        .optional()
        .meta({ description: 'the ticket of an earlier `queued` answer: keeps the place' }),
      Accept: z
        .enum(['application/json', 'text/event-stream'])
        .optional()
        .meta({ description: '`text/event-stream`: wait on one streamed answer instead of polling' }),
    }),
  },
  requestBody: {
    required: true,
    content: {
      'application/json': {
        schema: orderBody(DEFAULT_MAX_ORDER_QUANTITY).meta({
          example: { productId: 'drop-1', userId: 'alice', quantity: 1 },
        }),
      },
    },
  },
  responses: {
    '200': {
      description: 'the buyer must wait: a stream of `queued` events, then one `result`',
      headers: z.object({
        'Queue-Ticket': z.string().meta({ description: "the buyer's ticket: come back with it" }),
      }),
      content: { 'text/event-stream': { schema: z.string().meta({ example: STREAM_EXAMPLE }) } },
    },
    '202': json('the order: its units are sold to this buyer', placedOrder),
    ...errorResponses(ORDER_CODES),
  },
};

const fate = (what: 'pay' | 'cancel'): ZodOpenApiOperationObject => ({
  operationId: what === 'pay' ? 'payOrder' : 'cancelOrder',
  tags: ['orders'],
  summary:
    what === 'pay'
      ? 'Pay an order (before payBy); paying again answers the same'
      : 'Cancel an order: its units go back on sale',
  description:
    what === 'pay'
      ? "With PAYMENT_WEBHOOK_SECRET set this is the payment provider's call: it carries X-Payment-Timestamp and X-Payment-Signature."
      : 'Cancelling again answers the same.',
  security: BUYER_SECURITY,
  requestParams: {
    path: orderPath,
    ...(what === 'pay' && {
      header: z.object({
        'X-Payment-Timestamp': z
          .string()
          .optional()
          .meta({ description: 'unix seconds, within 5 minutes (webhook mode)' }),
        'X-Payment-Signature': z
          .string()
          .optional()
          .meta({ description: 'sha256=<hex HMAC-SHA256 over "<timestamp>.<raw body>"> (webhook mode)' }),
      }),
    }),
  },
  requestBody: { required: true, content: { 'application/json': { schema: fateBody } } },
  responses: {
    '200': json(what === 'pay' ? 'paid' : 'cancelled', fateAnswer(what === 'pay' ? 'paid' : 'cancelled')),
    ...errorResponses([
      ...BODY_CODES,
      'unauthenticated',
      ...(what === 'pay' ? (['invalid_signature', 'order_cancelled'] as const) : (['already_paid'] as const)),
      'buyer_mismatch',
      'unknown_order',
      'order_expired',
      'busy',
      'unavailable',
    ]),
  },
});

export const buyerPaths: ZodOpenApiPathsObject = {
  '/api/orders': { post: placeOrder },
  '/api/orders/{orderId}': {
    get: {
      operationId: 'getOrder',
      tags: ['orders'],
      summary: "An order's status (with BUYER_AUTH jwt or header: its buyer's, or the admin's, only)",
      security: [...BUYER_SECURITY, { adminToken: [] }],
      requestParams: { path: orderPath },
      responses: {
        '200': json('the order; the admin sees its internals too', orderView),
        ...errorResponses([
          ...TRANSPORT_CODES,
          'unauthenticated',
          'unknown_order',
          'too_many_attempts',
          'unavailable',
        ]),
      },
    },
  },
  '/api/orders/{orderId}/pay': { post: fate('pay') },
  '/api/orders/{orderId}/cancel': { post: fate('cancel') },
  '/api/products/{productId}': {
    get: {
      operationId: 'getProduct',
      tags: ['products'],
      security: [],
      summary: 'What is left on sale, and when',
      requestParams: { path: productPath },
      responses: {
        '200': json('the product', productView),
        ...errorResponses([...TRANSPORT_CODES, 'unknown_product', 'unavailable']),
      },
    },
  },
};

export const streamEventSchemas = { QueuedEvent: streamEvents.queued, ResultEvent: streamEvents.result };
