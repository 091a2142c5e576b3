// Admin authentication: `Authorization: Bearer <ADMIN_TOKEN>`, compared in constant time (digests of
// equal length, so neither content nor length leaks through timing). 401 without a token, 403 wrong.
import { createHash, timingSafeEqual } from 'node:crypto';
import type { RequestHandler } from 'express';
import { HttpError } from './errors.ts';

export function adminAuth(token: string): RequestHandler {
  const expected = createHash('sha256').update(token).digest();
  return (req, _res, next) => {
    const header = req.get('authorization') ?? '';
    const m = /^Bearer\s+(.+)$/i.exec(header.trim());
    if (!m?.[1])
      return next(new HttpError('unauthorized', 'admin endpoints need Authorization: Bearer <ADMIN_TOKEN>'));
    const given = createHash('sha256').update(m[1]).digest();
    if (!timingSafeEqual(given, expected)) return next(new HttpError('forbidden', 'wrong admin token'));
    next();
  };
}
