// The one door of POST /api/orders: refused on arrival when over capacity, else read, authenticated,
// admitted, placed or queued (held on its stream when asked), answered, counted and logged, once each.
import type { IncomingMessage, RequestListener, ServerResponse } from 'node:http';
import { performance } from 'node:perf_hooks';
import type { Logger } from '../log.ts';
import type { OrderOutcome } from '../metrics.ts';
import type { Place } from '../waiting-room/index.ts';
import { send } from './answers.ts';
import { type BodyLimits, guardBody } from './body-limits.ts';
import { busyAnswer } from './busy-answers.ts';
import type { BuyerIdentity } from './buyer-identity.ts';
import type { Answer } from './errors.ts';
import { type ReadBody, readOrderBody } from './order-body.ts';
import type { OrderGate } from './order-gate.ts';
import type { OrderCall, OrderIntake } from './order-intake.ts';
import { logAnswer, requestId } from './request-log.ts';
import type { StreamHolder } from './streams/stream-holder.ts';
import { clientAddress, type Trust } from './trust.ts';
import { writeAtTurnEnd } from './turn-end.ts';

export interface OrderDoorOptions {
  gate: OrderGate;
  intake: OrderIntake;
  identity: BuyerIdentity;
  /** TRUST_PROXY compiled, and whether it trusts nobody (the client is then the socket's peer). */
  trust: Trust;
  nobodyTrusted: boolean;
  /** Counts an answer (metrics: orders by outcome, and their latency). */
  onAnswer: (outcome: OrderOutcome, seconds: number) => void;
  /** The request log's lines, and errors of no known status. */
  logger: Logger;
  /** Waiting buyers' streams (WAITING_ROOM on, WAITING_ROOM_MAX_STREAMS > 0). */
  streams?: StreamHolder | undefined;
  /** The body's limit and timeout (body-limits.ts): over it, refused at once and the connection closed. */
  bodyLimits: BodyLimits;
}

/** What the door knows of a request while it decides it. */
interface Visit {
  req: IncomingMessage;
  res: ServerResponse;
  id: string;
  receivedAt: number;
}

/**
 * The server's request listener: POST /api/orders through the door, anything else to `app` (express).
 *
 * @example
 * createServer(withOrderDoor(app, { gate, intake, identity, trust, nobodyTrusted, onAnswer, logger }));
 */
export function withOrderDoor(app: RequestListener, o: OrderDoorOptions): RequestListener {
  const door = new OrderDoor(o);
  return (req, res) => {
    if (isOrderPost(req)) door.enter(req, res);
    else app(req, res);
  };
}

/** POST /api/orders as express would route it: any case, a trailing slash, a query string. */
export function isOrderPost(req: IncomingMessage): boolean {
  return req.method === 'POST' && ORDERS_PATH.test(req.url ?? '');
}

const ORDERS_PATH = /^\/api\/orders\/?(?:\?|$)/i;

class OrderDoor {
  constructor(private readonly o: OrderDoorOptions) {}

  /**
   * First the shed check (admission control refuses on arrival: a prebuilt 429 busy, the body
   * unread), then the order decided.
   */
  enter(req: IncomingMessage, res: ServerResponse): void {
    const visit = { req, res, id: requestId(header(req, 'x-request-id')), receivedAt: performance.now() };
    const retryAfter = this.o.gate.refuseOnArrival();
    if (retryAfter === undefined) {
      void this.decide(visit);
      return;
    }
    const busy = busyAnswer(retryAfter);
    writeAtTurnEnd(res, (r) => {
      r.writeHead(busy.status, [...busy.headers, 'X-Request-Id', visit.id]);
      r.end(busy.body);
    });
    this.answered(visit, 'busy', busy.status);
  }

  private async decide(v: Visit): Promise<void> {
    if (!guardBody(v.req, v.res, this.o.bodyLimits)) {
      this.answered(v, 'invalid', 413);
      return;
    }
    let read: ReadBody | 'refused' = 'refused';
    let call: OrderCall | undefined;
    const { answer, outcome } = await this.o.intake.answer(
      async () => {
        read = await readOrderBody(v.req, v.res);
        call = await this.call(v, read);
        return call;
      },
      (err) => this.o.logger.child({ reqId: v.id }).error({ err, path: v.req.url }, 'unexpected error'),
    );
    // The client went away mid-body, or its body was refused as it came (guardBody answered it).
    if (read === undefined || v.res.headersSent) return;
    if (outcome === 'queued' && call && this.held(v, call, answer)) {
      this.answered(v, outcome, 200);
      return;
    }
    writeAtTurnEnd(v.res, (r) => send(r, answer, v.id));
    this.answered(v, outcome, answer.status);
  }

  /** The call once the body is read: its buyer bound when authenticated. */
  private async call(v: Visit, read: ReadBody): Promise<OrderCall> {
    const req = v.req as IncomingMessage & { body?: unknown };
    req.body = read?.body;
    // Without buyer authentication nothing here waits: no promise to make and settle.
    if (this.o.identity.mode !== 'none') await this.o.identity.bind(req);
    return {
      body: req.body,
      idempotencyKey: header(req, 'idempotency-key'),
      ticket: header(req, 'queue-ticket'),
      address: () => clientAddress(req, this.o.trust, this.o.nobodyTrusted),
      waitedMs: performance.now() - v.receivedAt,
      streams: wantsStream(req) && this.o.streams?.hasRoom() === true,
    };
  }

  /** A waiting buyer who asked for a stream is held on it (false past the bound: it polls). */
  private held(v: Visit, call: OrderCall, answer: Answer): boolean {
    if (!this.o.streams || !wantsStream(v.req)) return false;
    return this.o.streams.hold(v.res, call, answer.body as unknown as Place, v.id);
  }

  /** The one place an answer is counted and logged. */
  private answered(v: Visit, outcome: OrderOutcome, status: number): void {
    this.o.onAnswer(outcome, (performance.now() - v.receivedAt) / 1000);
    const line = { method: v.req.method, path: v.req.url, status, started: v.receivedAt };
    logAnswer(this.o.logger, line, { log: () => this.o.logger.child({ reqId: v.id }) });
  }
}

/** `Accept: text/event-stream` (DESIGN.md §4, streaming admission). */
function wantsStream(req: IncomingMessage): boolean {
  return req.headers.accept?.includes('text/event-stream') === true;
}

/** A request header as express's req.get reads it (node joins a repeated one with ", "). */
function header(req: IncomingMessage, name: string): string | undefined {
  return req.headers[name] as string | undefined;
}
