// The shed lane: an order that admission control would refuse on arrival is answered 429 busy before
// express reads or parses it, so that under overload a refusal costs microseconds, not a request.
import type { IncomingMessage, RequestListener } from 'node:http';
import { BusyError } from '../inventory/errors.ts';
import { errorAnswer } from './errors.ts';
import type { OrderGate } from './order-gate.ts';
import { requestId } from './request-log.ts';
import { writeAtTurnEnd } from './turn-end.ts';

export interface ShedLaneOptions {
  gate: OrderGate;
  /** Called for every order the lane answered (metrics: orders by outcome). */
  onShed?: () => void;
}

/**
 * `app` behind the shed lane. Without it, a process at its limit still pays a whole express request
 * (routing, body parsing, validation, logging context) to say "busy", and under a herd several times
 * its capacity those refusals alone saturate it: answers queue in socket buffers and latency grows
 * without bound (measured: a bare express answer costs about 6x a raw one here). The lane answers
 * exactly what the gate would have answered (429 busy, jittered Retry-After), only earlier; the
 * request's body is left unread (Node discards it, so the connection stays usable), which means an
 * order refused here is not validated first and a product's sold-out answer waits for the retry.
 *
 * @example
 * createServer(withShedLane(app, { gate, onShed: () => metrics.orders.inc({ outcome: 'busy' }) }));
 */
export function withShedLane(app: RequestListener, o: ShedLaneOptions): RequestListener {
  return (req, res) => {
    const retryAfter = isOrderPost(req) ? o.gate.refuseOnArrival() : undefined;
    if (retryAfter === undefined) {
      app(req, res);
      return;
    }
    o.onShed?.();
    const answer = busyAnswer(retryAfter);
    const id = requestId(req.headers['x-request-id'] as string | undefined);
    writeAtTurnEnd(res, (r) => {
      r.writeHead(answer.status, [...answer.headers, 'X-Request-Id', id]);
      r.end(answer.body);
    });
  };
}

interface RawAnswer {
  status: number;
  /** Flat [name, value, ...] list, as writeHead takes it without copying into an object. */
  headers: string[];
  body: string;
}

/** The lane's answers by Retry-After, built once: a refusal then costs no error, no JSON, no header object. */
const busyAnswers = new Map<number, RawAnswer>();

function busyAnswer(retryAfterSeconds: number): RawAnswer {
  let answer = busyAnswers.get(retryAfterSeconds);
  if (answer === undefined) {
    const a = errorAnswer(new BusyError(undefined, retryAfterSeconds));
    const body = JSON.stringify(a.body);
    const headers = Object.entries({
      ...a.headers,
      'Content-Type': 'application/json; charset=utf-8',
      'Content-Length': String(Buffer.byteLength(body)),
    }).flat();
    answer = { status: a.status, headers, body };
    busyAnswers.set(retryAfterSeconds, answer);
  }
  return answer;
}

/** POST /api/orders (with or without a query string). */
export function isOrderPost(req: IncomingMessage): boolean {
  return req.method === 'POST' && (req.url === '/api/orders' || req.url?.startsWith('/api/orders?') === true);
}
