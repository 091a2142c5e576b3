// The order lane: POST /api/orders read and decided before express routes it, so that the herd's
// answers (sold out, queued, not started, rate limited) cost little more than a bare node:http answer.
import { isUtf8 } from 'node:buffer';
import type { IncomingMessage, RequestListener, ServerResponse } from 'node:http';
import { performance } from 'node:perf_hooks';
import type { Express, Request } from 'express';
import type { Logger } from '../log.ts';
import type { OrderOutcome } from '../metrics.ts';
import { send } from './answers.ts';
import type { BuyerIdentity } from './buyer-identity.ts';
import { HttpError } from './errors.ts';
import type { OrderCall, OrderIntake } from './order-intake.ts';
import { logAnswer, requestId } from './request-log.ts';
import { isOrderPost } from './shed-lane.ts';
import { writeAtTurnEnd } from './turn-end.ts';

export interface OrderLaneOptions {
  intake: OrderIntake;
  identity: BuyerIdentity;
  /** Counts an answer given here (metrics: orders by outcome, and their latency). */
  onAnswer: (outcome: OrderOutcome, seconds: number) => void;
  /** Logs the answers as express's request log does (request-log.ts), and errors of no known status. */
  logger: Logger;
}

/** The bodies the lane reads: plain UTF-8 JSON of a known length up to the JSON reader's limit. */
const MAX_BODY_BYTES = 16 * 1024;
const JSON_UTF8 = /^application\/json\s*(?:;\s*charset\s*=\s*"?utf-8"?\s*)?$/i;
const NOT_JSON = 'body is not valid JSON';

/**
 * `app` behind the order lane. Express's routing, body reader and answer cost an order about 8-11x a
 * bare node:http answer (docs/benchmarks.md), which under a herd is most of the process. The lane
 * reads the body itself and runs what the express route runs — the buyer's identity
 * (BuyerIdentity.bind), then OrderIntake.answer (admission and the use case), on express's own
 * request object where express's getters are needed — so every answer is the same, given without
 * the router. Anything else (other encodings, chunked
 * bodies, other content types) goes to express untouched, to be answered as before. Its answers are
 * counted and logged as express's.
 *
 * @example
 * createServer(withOrderLane(app, { intake, identity, onAnswer: countOrder, logger }));
 */
export function withOrderLane(app: Express, o: OrderLaneOptions): RequestListener {
  return (req, res) => {
    if (isOrderPost(req) && plainJson(req)) void decide(app, o, req, res);
    else app(req, res);
  };
}

async function decide(app: Express, o: OrderLaneOptions, req: IncomingMessage, res: ServerResponse) {
  const receivedAt = performance.now();
  const bytes = await readBody(req);
  // The client went away mid-body: there is nobody to answer.
  if (bytes === undefined) return;
  // Express's request object (req.get, req.ip after TRUST_PROXY, req.app), as its router makes it,
  // made only when asked for: a buyer token or a per-address limit (re-prototyping has its cost).
  let asExpress: Request | undefined;
  const expressRequest = () => {
    asExpress ??= Object.setPrototypeOf(req, app.request) as Request;
    return asExpress;
  };
  const read = req as IncomingMessage & { body?: unknown };
  const id = requestId(req.headers['x-request-id'] as string | undefined);
  const log = () => o.logger.child({ reqId: id });
  const call = (): OrderCall => ({
    body: read.body,
    idempotencyKey: header(req, 'idempotency-key'),
    ticket: header(req, 'queue-ticket'),
    address: () => clientAddress(app, req, expressRequest),
    waitedMs: performance.now() - receivedAt,
  });
  const { answer: a, outcome } = await o.intake.answer(
    () => {
      read.body = decode(bytes);
      // Without buyer authentication nothing here waits: no promise to make and settle.
      if (o.identity.mode === 'none') return call();
      return o.identity.bind(expressRequest()).then(call);
    },
    (err) => log().error({ err, method: req.method, path: req.url }, 'unexpected error'),
  );
  writeAtTurnEnd(res, (r) => send(r, a, id));
  o.onAnswer(outcome, (performance.now() - receivedAt) / 1000);
  logAnswer(o.logger, { method: req.method, path: req.url, status: a.status, started: receivedAt }, { log });
}

/**
 * req.ip as express gives it. With no proxy trusted (TRUST_PROXY unset) that is the socket's peer,
 * read without making express's request: a herd's per-address limit then costs no re-prototyping.
 */
function clientAddress(app: Express, req: IncomingMessage, asExpress: () => Request): string | undefined {
  return app.get('trust proxy') === false ? req.socket.remoteAddress : asExpress().ip;
}

/** A request header as express's req.get reads it (node joins a repeated one with ", "). */
function header(req: IncomingMessage, name: string): string | undefined {
  return req.headers[name] as string | undefined;
}

/** A body the lane reads: a JSON type in UTF-8, of a declared length, not compressed. */
function plainJson(req: IncomingMessage): boolean {
  const h = req.headers;
  const length = Number(h['content-length']);
  return (
    h['transfer-encoding'] === undefined &&
    (h['content-encoding'] === undefined || h['content-encoding'] === 'identity') &&
    Number.isInteger(length) &&
    length > 0 &&
    length <= MAX_BODY_BYTES &&
    JSON_UTF8.test(h['content-type'] ?? '')
  );
}

/** The whole body, or undefined when the request ended before it (the client went away). */
function readBody(req: IncomingMessage): Promise<Buffer | undefined> {
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.once('end', () => resolve(Buffer.concat(chunks)));
    req.once('error', () => resolve(undefined));
    req.once('close', () => {
      if (!req.complete) resolve(undefined);
    });
  });
}

/** JSON as express.json reads it here (strict: an object or array; UTF-8, a BOM allowed). */
function decode(bytes: Buffer): unknown {
  if (!isUtf8(bytes)) throw new HttpError('invalid_encoding', 'body is not valid UTF-8');
  let text = bytes.toString('utf8');
  if (text.charCodeAt(0) === 0xfeff) text = text.slice(1);
  const first = text.trimStart()[0];
  if (first !== '{' && first !== '[') throw new HttpError('invalid_request', NOT_JSON);
  try {
    return JSON.parse(text);
  } catch {
    throw new HttpError('invalid_request', NOT_JSON);
  }
}
