// Order metrics: POST /api/orders counted and timed by outcome (a closed set of labels mapped from the
// answer's error code), and the orders answered sold out without touching Redis.

import { Counter, Histogram, type Registry } from 'prom-client';
import type { ErrorCode } from '../errors.ts';

/** Outcomes of POST /api/orders as counted by flashsale_orders_total (a closed set). */
const ORDER_OUTCOMES = [
  'accepted',
  'replayed',
  'sold_out',
  'insufficient_stock',
  'busy',
  'queued',
  'rate_limited',
  'limit_exceeded',
  'not_started',
  'sale_ended',
  'invalid',
  'unknown_product',
  'conflict',
  'unavailable',
  'outcome_unknown',
  'error',
] as const;
export type OrderOutcome = (typeof ORDER_OUTCOMES)[number];

/** Typed by ErrorCode, so a renamed code cannot silently fall into `error`; unlisted codes are errors. */
const OUTCOME_BY_CODE: Partial<Record<ErrorCode, OrderOutcome>> = {
  sold_out: 'sold_out',
  insufficient_stock: 'insufficient_stock',
  busy: 'busy',
  rate_limited: 'rate_limited',
  limit_exceeded: 'limit_exceeded',
  not_started: 'not_started',
  sale_ended: 'sale_ended',
  invalid_request: 'invalid',
  invalid_encoding: 'invalid',
  headers_too_large: 'invalid',
  request_timeout: 'invalid',
  unauthenticated: 'invalid',
  buyer_mismatch: 'invalid',
  invalid_ticket: 'invalid',
  queued: 'queued',
  payload_too_large: 'invalid',
  unsupported_media_type: 'invalid',
  unknown_product: 'unknown_product',
  idempotency_key_reused: 'conflict',
  request_in_progress: 'conflict',
  unavailable: 'unavailable',
  outcome_unknown: 'outcome_unknown',
};

/** The outcome label of an order answer: its error code mapped onto ORDER_OUTCOMES, never free text. */
export function orderOutcome(status: number, code: unknown): OrderOutcome {
  if (status >= 200 && status < 300) return 'accepted';
  return (typeof code === 'string' && OUTCOME_BY_CODE[code as ErrorCode]) || 'error';
}

export function orderMetrics(registry: Registry) {
  const orders = new Counter({
    name: 'flashsale_orders_total',
    help: `Order requests by outcome (${ORDER_OUTCOMES.join(', ')}); replayed = answered from an Idempotency-Key`,
    labelNames: ['outcome'] as const,
    registers: [registry],
  });
  // Every outcome exposed from the start, so that rate() sees its first increment.
  for (const outcome of ORDER_OUTCOMES) orders.inc({ outcome }, 0);
  const orderSeconds = new Histogram({
    name: 'flashsale_order_duration_seconds',
    help: 'Latency of POST /api/orders by outcome',
    labelNames: ['outcome'] as const,
    buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5],
    registers: [registry],
  });
  return {
    orders,
    orderSeconds,
    /** Counts one answer to POST /api/orders and its latency, by outcome. */
    observeOrder(outcome: OrderOutcome, seconds: number): void {
      orders.inc({ outcome });
      orderSeconds.observe({ outcome }, seconds);
    },
    soldOutFastPath: new Counter({
      name: 'flashsale_sold_out_fast_path_total',
      help: 'Orders answered sold out from the in-process flag, without touching Redis',
      registers: [registry],
    }),
  };
}
