// The admin routes in the OpenAPI document (behind Authorization: Bearer $ADMIN_TOKEN): create or
// replace a sale, restock, reshard, its status, the conservation check and the dashboard's live view.
import { z } from 'zod';
import type { ZodOpenApiOperationObject, ZodOpenApiPathsObject } from 'zod-openapi';
import type { ErrorCode } from '../../errors.ts';
import { sinceQuery } from '../routes/dashboard.ts';
import { reshardBody, restockBody, saleBody } from '../validation.ts';
import { isoTime, json, productId, productPath } from './common.ts';
import { BODY_CODES, errorResponses, TRANSPORT_CODES } from './error-bodies.ts';

const count = z.number().int().min(0);
const ADMIN_CODES: ErrorCode[] = [...TRANSPORT_CODES, 'unauthorized', 'too_many_attempts'];
const CHANGE_CODES: ErrorCode[] = [...ADMIN_CODES, ...BODY_CODES, 'busy', 'unavailable'];

const window = { startsAt: isoTime.optional(), endsAt: isoTime.optional() };
const shard = z.looseObject({
  index: count,
  key: z.string(),
  stock: count,
  sold: count,
  retired: z.literal(true).optional(),
  master: z.string().optional(),
});

const saleStatus = z
  .looseObject({
    productId,
    generation: count,
    perUserLimit: z.number().int().min(1).nullable().meta({ description: 'null: no limit' }),
    total: count,
    available: count,
    sold: count,
    reserved: count,
    confirmed: count,
    paid: count,
    returning: count,
    returned: count,
    orders: z.object({ paid: count, expired: count, cancelled: count }),
    awaitingPayment: count,
    staleReservations: count,
    shards: z.array(shard),
    pending: z.looseObject({}).nullable().meta({ description: 'a change journaled and not switched yet' }),
    failedJobs: z.looseObject({
      count,
      scanned: count,
      recent: z.array(z.looseObject({ orderId: z.string(), reason: z.string() })),
    }),
  })
  .meta({ id: 'SaleStatus' });

/** A change's audit row names the token's holder and address, and this label as the caller's claim. */
const actorHeader = z.object({
  'X-Admin-Actor': z.string().optional().meta({
    description: 'a label for the audit row: 1-64 of [A-Za-z0-9_.:@ -], anything else left out',
    example: 'alice',
  }),
});

const operation = (
  operationId: string,
  summary: string,
  answer: ReturnType<typeof json>,
  codes: ErrorCode[],
  body?: z.ZodType,
): ZodOpenApiOperationObject => ({
  operationId,
  tags: ['admin'],
  summary,
  security: [{ adminToken: [] }],
  requestParams: { path: productPath, ...(body && { header: actorHeader }) },
  ...(body && { requestBody: { required: true, content: { 'application/json': { schema: body } } } }),
  responses: { '200': answer, ...errorResponses(codes) },
});

const saleAnswer = z
  .object({
    productId,
    total: count,
    available: count,
    shards: z.number().int().min(1),
    generation: count,
    perUserLimit: z.number().int().min(1).nullable(),
    ...window,
    paymentTimeoutSec: z.number().int().min(1).optional(),
    queue: z.looseObject({ lottery: z.looseObject({}) }).optional(),
  })
  .meta({ id: 'Sale' });

const putSale = operation(
  'putSale',
  'Create (201) or replace (200) a sale: `stock` units over `shards` shards',
  json('replaced', saleAnswer),
  CHANGE_CODES,
  saleBody.meta({
    example: { stock: 100, shards: 4, startsAt: '2026-12-01T20:00:00Z', paymentTimeoutSec: 600 },
  }),
);
putSale.responses['201'] = json('created', saleAnswer);

const difference = z.object({
  check: z.string(),
  expected: z.number(),
  found: z.number(),
  detail: z.string(),
});
const live = z
  .looseObject({
    productId,
    at: count,
    replica: z.object({ hostname: z.string(), pid: count }),
    sale: z.looseObject({ soldOut: z.boolean() }),
    rates: z.array(z.looseObject({})),
    saleHistory: z.array(z.looseObject({})),
  })
  .meta({ id: 'LiveView', description: "the live dashboard's data" });

export const adminPaths: ZodOpenApiPathsObject = {
  '/admin/products/{productId}': {
    put: putSale,
    get: operation('getSaleStatus', "The sale's units, orders and shards", json('the status', saleStatus), [
      ...ADMIN_CODES,
      'unknown_product',
      'busy',
      'unavailable',
    ]),
  },
  '/admin/products/{productId}/restock': {
    post: operation(
      'restock',
      'Add (or, negative, remove) units; rebalances the shards in a new generation',
      json(
        'the new totals',
        z.object({ productId, delta: z.number().int(), total: count, available: count, generation: count }),
      ),
      [...CHANGE_CODES, 'unknown_product', 'insufficient_stock', 'stock_limit_exceeded'],
      restockBody.meta({ example: { delta: 50, note: 'second pallet' } }),
    ),
  },
  '/admin/products/{productId}/reshard': {
    post: operation(
      'reshard',
      'Spread the units over another number of shards, live',
      json(
        'the new shards',
        z.object({ productId, shards: z.number().int().min(1), generation: count, available: count }),
      ),
      [...CHANGE_CODES, 'unknown_product'],
      reshardBody.meta({ example: { shards: 8 } }),
    ),
  },
  '/admin/products/{productId}/reconcile': {
    get: operation(
      'reconcile',
      'Check conservation: available + returning + sold == total, Redis against Postgres',
      json(
        'the checks',
        z.looseObject({
          ok: z.boolean(),
          differences: z.array(difference),
          available: count,
          sold: count,
          total: count,
        }),
      ),
      [...ADMIN_CODES, 'unknown_product', 'busy', 'unavailable'],
    ),
  },
  '/admin/products/{productId}/live': {
    get: {
      ...operation('live', "The live dashboard's data", json('the live view', live), [
        ...ADMIN_CODES,
        'unknown_product',
        'unavailable',
      ]),
      requestParams: {
        path: productPath,
        query: z.object({ since: sinceQuery.meta({ description: 'epoch ms: leave out older history' }) }),
      },
    },
  },
};
