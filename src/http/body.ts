// The JSON body reader of the routes that take one: at most 16 kB, an object or array (strict), in
// UTF-8 only (415 for any other charset), bytes valid as such (not silently replaced: refused).
import { isUtf8 } from 'node:buffer';
import express, { type RequestHandler } from 'express';
import { MAX_BODY_BYTES } from './body-limits.ts';
import { HttpError } from './errors.ts';
import { keepRawBody } from './payment-signature.ts';

export function jsonBody(): RequestHandler {
  return express.json({
    limit: MAX_BODY_BYTES,
    strict: true,
    verify: (req, res, buf, encoding) => {
      // The reader decodes any utf-* charset; the contract takes UTF-8 alone (docs/api.md).
      if (!/^utf-?8$/i.test(encoding))
        throw new HttpError('unsupported_media_type', 'body must be UTF-8 JSON (charset utf-8 or none)');
      if (!isUtf8(buf)) throw new HttpError('invalid_encoding', 'body is not valid UTF-8');
      keepRawBody(req, res, buf);
    },
  });
}
