// What a request is addressed to, checked before routing: an HTTP/1.1 Host, and a path in the
// spelling the service uses (what a request reaches never depends on how its path was spelled).
import type { IncomingMessage } from 'node:http';
import type { RequestHandler } from 'express';
import { HttpError } from './errors.ts';
import { MethodNotAllowedError } from './routes/allow.ts';

/** The methods of the service as a whole: what `OPTIONS *` (asterisk-form) is told. */
export const SERVER_METHODS = 'GET, HEAD, POST, PUT';

/**
 * What no path of the service is spelled with: a backslash, an empty or dot segment, a trailing
 * slash. Case is the routers' to match (routes/allow.ts exactRouter), and the pay route checks its
 * own spelling (payment-signature.ts).
 */
const NON_CANONICAL = /\\|\/\/|\/\.\.?(?:\/|$)|.\/$/;
/**
 * A percent-encoded unreserved character (RFC 3986 §2.3: a letter, digit, `-`, `.`, `_`, `~`), whose
 * canonical spelling is the character itself: `p%61y` is `pay`, `%2E%2E` is `..`. Other encodings
 * (`%20`, `%2F` in an id) spell data that is not a path's own: the route answers those.
 */
const ENCODED_UNRESERVED = /%(?:[46][1-9a-fA-F]|[57][0-9aA]|3[0-9]|2[dDeE]|5[fF]|7[eE])/;

/** Why `url` (a request target as sent) is not in its canonical spelling; undefined when it is. */
export function nonCanonical(url: string): string | undefined {
  if (!url.startsWith('/')) return 'the request target must be a path (origin-form), not a URL';
  const q = url.indexOf('?');
  const path = q === -1 ? url : url.slice(0, q);
  if (NON_CANONICAL.test(path) || ENCODED_UNRESERVED.test(path))
    return 'path not in its canonical spelling (no percent-encoded letter, digit or -._~, backslash, empty or dot segment, trailing slash)';
  return undefined;
}

/**
 * Why `req` is refused before routing, or undefined: HTTP/1.1 without Host (400 invalid_request: Node's
 * own check answers a bare 400, so the server leaves it here, server-options.ts), `OPTIONS *` (405:
 * no CORS, nothing to say about the server), a path not in its canonical spelling (400
 * `non_canonical_path`). For any door in front of express as for express.
 */
export function targetRefusal(req: IncomingMessage): HttpError | undefined {
  if (req.httpVersion === '1.1' && !req.headers.host)
    return new HttpError('invalid_request', 'an HTTP/1.1 request needs a Host header');
  const url = req.url ?? '';
  if (url === '*') return new MethodNotAllowedError(req.method ?? 'OPTIONS', '*', SERVER_METHODS);
  const why = nonCanonical(url);
  return why === undefined ? undefined : new HttpError('non_canonical_path', why);
}

/** Middleware before every router: the refusals of targetRefusal. */
export function checkTarget(): RequestHandler {
  return (req, _res, next) => next(targetRefusal(req));
}
