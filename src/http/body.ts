// The JSON body reader of the routes that take one: at most 16 kB, an object or array (strict), and
// bytes that are valid UTF-8 (not silently replaced: a body that does not decode is refused).
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
      if (/^utf-?8$/i.test(encoding) && !isUtf8(buf))
        throw new HttpError('invalid_encoding', 'body is not valid UTF-8');
      keepRawBody(req, res, buf);
    },
  });
}
