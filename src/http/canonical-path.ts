// Paths are taken as the service spells them, or refused before routing: what a request reaches (and
// what the pay route's signature is checked over) never depends on how its path was spelled.
import type { RequestHandler } from 'express';
import { HttpError } from './errors.ts';

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

/** Middleware before every router: 400 `non_canonical_path` for a path spelled any other way. */
export function canonicalPaths(): RequestHandler {
  return (req, _res, next) => {
    const why = nonCanonical(req.url);
    next(why === undefined ? undefined : new HttpError('non_canonical_path', why));
  };
}
