// The body of POST /api/orders as the contract allows it: JSON in UTF-8, of a declared length or
// chunked, as is or gzip/deflate/br (its size and time are guarded by body-limits.ts, before).
import { isUtf8 } from 'node:buffer';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { jsonBody } from './body.ts';
import { HttpError } from './errors.ts';

const JSON_UTF8 = /^application\/json\s*(?:;\s*charset\s*=\s*"?utf-8"?\s*)?$/i;
const NOT_JSON = 'body is not valid JSON';

/** Express's JSON reader, for the bodies the plain reader leaves (chunked, encoded, other types). */
const parser = jsonBody();

/** A read request: its body, or `undefined` when the client went away before it ended. */
export type ReadBody = { body: unknown } | undefined;

/**
 * Reads an order's body. Plain UTF-8 JSON of a declared length (what every client sends) is read
 * here, without express's reader and its per-request parsing of the headers; anything else goes
 * through that reader, so both answer the same. Throws the refusal: 413 payload_too_large (a
 * decoded body over the limit), 415, 400 invalid_request / invalid_encoding.
 *
 * @example
 * const read = await readOrderBody(req, res);
 * if (read === undefined) return; // nobody to answer
 */
export async function readOrderBody(req: IncomingMessage, res: ServerResponse): Promise<ReadBody> {
  const length = Number(req.headers['content-length'] ?? Number.NaN);
  if (plainJson(req, length)) {
    const bytes = await readAll(req);
    return bytes && { body: decode(bytes) };
  }
  return parsed(req, res);
}

/** A body the plain reader takes: a JSON type in UTF-8, of a declared length, not compressed. */
function plainJson(req: IncomingMessage, length: number): boolean {
  const h = req.headers;
  return (
    h['transfer-encoding'] === undefined &&
    (h['content-encoding'] === undefined || h['content-encoding'] === 'identity') &&
    Number.isInteger(length) &&
    length > 0 &&
    JSON_UTF8.test(h['content-type'] ?? '')
  );
}

/** The whole body, or undefined when the request ended before it (the client went away). */
function readAll(req: IncomingMessage): Promise<Buffer | undefined> {
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

/** JSON as express.json reads it (strict: an object or array; UTF-8, a BOM allowed). */
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

/** The body through express's JSON reader (body-parser works on any node:http request). */
function parsed(req: IncomingMessage, res: ServerResponse): Promise<ReadBody> {
  const withBody = req as IncomingMessage & { body?: unknown };
  return new Promise((resolve, reject) => {
    // body-parser's types name express's request; it reads only node:http's fields.
    parser(withBody as never, res as never, (err?: unknown) =>
      err === undefined ? resolve({ body: withBody.body }) : reject(err),
    );
  });
}
