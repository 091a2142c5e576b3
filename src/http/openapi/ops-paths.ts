// The ops and documentation routes in the OpenAPI document: health, readiness, metrics, the
// dashboard page, this document and its reference page.
import { z } from 'zod';
import type { ZodOpenApiOperationObject, ZodOpenApiPathsObject } from 'zod-openapi';
import type { ErrorCode } from '../../errors.ts';
import { json, requestIdHeader } from './common.ts';
import { errorResponses, TRANSPORT_CODES } from './error-bodies.ts';

const page = (
  operationId: string,
  summary: string,
  type: string,
  example: string,
  codes: ErrorCode[] = [],
): ZodOpenApiOperationObject => ({
  operationId,
  tags: ['ops'],
  summary,
  security: [],
  responses: {
    ...errorResponses([...TRANSPORT_CODES, ...codes]),
    '200': {
      description: summary,
      headers: z.object(requestIdHeader),
      content: { [type]: { schema: z.string().meta({ example }) } },
    },
  },
});

const readiness = z
  .object({
    redis: z.boolean(),
    postgres: z.boolean(),
    etcd: z.boolean().optional(),
    zookeeper: z.boolean().optional(),
    streams: z
      .object({ held: z.number().int().min(0), max: z.number().int().min(0) })
      .optional()
      .meta({
        description:
          'waiting buyers this process holds on event streams, and its bound (WAITING_ROOM_MAX_STREAMS)',
      }),
  })
  .meta({
    id: 'Readiness',
    description:
      'each dependency reachable (and the lock backend, by name, when not Redis); the streams held',
    example: { redis: true, postgres: true, streams: { held: 12, max: 10000 } },
  });

export const opsPaths: ZodOpenApiPathsObject = {
  '/healthz': {
    get: {
      operationId: 'health',
      tags: ['ops'],
      security: [],
      summary: 'The process is up',
      responses: {
        ...errorResponses(TRANSPORT_CODES),
        '200': json('up', z.object({ status: z.literal('ok') })),
      },
    },
  },
  '/readyz': {
    get: {
      operationId: 'ready',
      tags: ['ops'],
      security: [],
      summary: 'Redis, Postgres and the lock backend are reachable',
      responses: {
        ...errorResponses(TRANSPORT_CODES),
        '200': json('ready', readiness),
        '503': json('not ready: the false ones are not reachable', readiness),
      },
    },
  },
  '/metrics': {
    get: page(
      'metrics',
      'Prometheus metrics; with METRICS_PORT set, on that port only (here: 404 not_found)',
      'text/plain',
      'flashsale_orders_total{outcome="accepted"} 42',
      ['not_found'],
    ),
  },
  '/dashboard': {
    get: page(
      'dashboard',
      'The live ops dashboard (asks for the admin token)',
      'text/html',
      '<!doctype html>…',
    ),
  },
  '/openapi.json': {
    get: {
      operationId: 'openapi',
      tags: ['ops'],
      security: [],
      summary: 'This document',
      responses: {
        ...errorResponses(TRANSPORT_CODES),
        '200': json(
          'the OpenAPI 3.1 document',
          z.looseObject({ openapi: z.string(), paths: z.looseObject({}) }),
        ),
      },
    },
  },
  '/docs/api': {
    get: page(
      'apiReference',
      'The API reference page, rendered from this document',
      'text/html',
      '<!doctype html>…',
    ),
  },
};
