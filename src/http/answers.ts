// How an outcome becomes an answer: typed errors by the status table, requests the transport could not
// read (body not JSON or not decodable, path not decodable) as 4xx, anything else a logged 500.
import type { ServerResponse } from 'node:http';
import type { Request } from 'express';
import { isCodedError, isConnectionError, UnavailableError } from '../errors.ts';
import type { PlacedOrder } from '../orders/place-order.ts';
import { type Answer, type ErrorAnswer, errorAnswer, HttpError } from './errors.ts';

const JSON_TYPE = 'application/json; charset=utf-8';

/**
 * Writes the answer: its JSON, Content-Type and Content-Length, `requestId` as X-Request-Id when
 * given, and its headers, in one writeHead and one res.end. Not express's res.json: that one
 * re-derives the type, charset and an ETag (off here) for every answer, about a tenth of a bare
 * answer's CPU. One raw header list spares node a setHeader call per header and its header map when
 * nothing was set before (a bare node:http server: 17.6 against 19.8 µs per answer); headers set
 * before (express's request log) are kept, these replacing any of the same name. Node leaves the
 * body out of a HEAD answer by itself. Any node:http response will do: express's, or the order
 * lane's before express.
 */
export function send(res: ServerResponse, answer: Answer, requestId?: string): void {
  const body = JSON.stringify(answer.body);
  const headers = ['Content-Type', JSON_TYPE, 'Content-Length', String(Buffer.byteLength(body))];
  if (requestId !== undefined) headers.push('X-Request-Id', requestId);
  const extra = answer.headers;
  if (extra) for (const name in extra) headers.push(name, extra[name] as string);
  res.writeHead(answer.status, headers);
  res.end(body);
}

/** The 202 of a placed order (also what a replayed or resolved Idempotency-Key answers). */
export function accepted(o: Pick<PlacedOrder, 'orderId' | 'productId' | 'userId' | 'quantity'>): Answer {
  const { orderId, productId, userId, quantity } = o;
  return { status: 202, body: { orderId, status: 'reserved', productId, userId, quantity } };
}

/** The answer for a failure; an unexpected one is logged with the request and answered 500. */
export function failure(err: unknown, req: Request): ErrorAnswer {
  return failureAnswer(err, () => logUnexpected(req)(err));
}

/** Logs an error of no known status with the express request it failed (the line a 500 leaves). */
export function logUnexpected(req: Request): (err: unknown) => void {
  return (err) => req.log.error({ err, method: req.method, path: req.originalUrl }, 'unexpected error');
}

/** The answer for a failure; `unexpected` hears one of no known status (answered 500) before it is answered. */
export function failureAnswer(err: unknown, unexpected: () => void): ErrorAnswer {
  const answer = known(err);
  if (answer) return answer;
  unexpected();
  return errorAnswer(err);
}

/** The answer for a failure, without logging (for counting it; failure() answers it). */
export function answerOf(err: unknown): ErrorAnswer {
  return known(err) ?? errorAnswer(err);
}

function known(err: unknown): ErrorAnswer | undefined {
  if (isCodedError(err)) return errorAnswer(err);
  const refused = unreadable(err);
  if (refused) return errorAnswer(refused);
  if (isConnectionError(err)) return errorAnswer(new UnavailableError('Redis or Postgres', err));
  return undefined;
}

/** Codes of zlib's decoding errors: gzip and deflate (Z_DATA_ERROR, ...), brotli (ERR__ERROR_FORMAT_...), zstd. */
const DECODING_ERROR = /^(Z_|ERR__ERROR_|ERR_BROTLI|ERR_ZSTD|ZSTD_)/;

/**
 * The typed error for a request the transport could not read (body-parser's and the router's errors,
 * told apart by their `type` or class), or undefined when `err` is not one.
 */
function unreadable(err: unknown): HttpError | undefined {
  if (err instanceof URIError) return new HttpError('invalid_request', 'path: malformed percent-encoding');
  if (!(err instanceof Error)) return undefined;
  const { type, code, status } = err as { type?: unknown; code?: unknown; status?: unknown };
  switch (type) {
    case 'entity.parse.failed':
      return new HttpError('invalid_request', 'body is not valid JSON');
    case 'entity.too.large':
      return new HttpError('payload_too_large', 'body larger than 16 kB');
    case 'encoding.unsupported':
    case 'charset.unsupported':
      return new HttpError(
        'unsupported_media_type',
        'body must be UTF-8 JSON, sent as is or with Content-Encoding gzip, deflate or br',
      );
    case 'request.aborted':
    case 'request.size.invalid':
      return new HttpError('invalid_request', 'body does not match its Content-Length');
  }
  if (typeof code === 'string' && DECODING_ERROR.test(code))
    return new HttpError('invalid_encoding', 'body does not decode as its Content-Encoding says');
  // Any other refusal of the body reader (http-errors, 4xx): the request, not the service, is at fault.
  if (typeof status === 'number' && status >= 400 && status < 500)
    return new HttpError('invalid_request', 'the request could not be read');
  return undefined;
}
