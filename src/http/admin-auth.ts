// Admin authentication: `Authorization: Bearer <ADMIN_TOKEN>`, compared in constant time (digests of
// equal length, so neither content nor length leaks through timing). 401 without a token, 403 wrong,
// 429 once an address sent too many wrong tokens (then its tokens are not even compared).
import { createHash, timingSafeEqual } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import { performance } from 'node:perf_hooks';
import type { RequestHandler } from 'express';
import { TooManyAttemptsError } from './auth-errors.ts';
import { HttpError } from './errors.ts';
import type { FailedAttempts } from './failed-attempts.ts';

/** The bearer token of the request's Authorization header; undefined without one. */
export function bearerToken(req: IncomingMessage): string | undefined {
  const m = /^Bearer\s+(.+)$/i.exec((req.headers.authorization ?? '').trim());
  return m?.[1];
}

/** A constant-time test of a token against ADMIN_TOKEN. */
export function adminTokenCheck(token: string): (given: string) => boolean {
  const expected = createHash('sha256').update(token).digest();
  return (given) => timingSafeEqual(createHash('sha256').update(given).digest(), expected);
}

export function adminAuth(token: string, failures?: FailedAttempts): RequestHandler {
  const isAdmin = adminTokenCheck(token);
  return (req, _res, next) => {
    const address = req.ip ?? 'unknown';
    const now = performance.now();
    const wait = failures?.blockedFor(address, now) ?? 0;
    if (wait > 0) return next(new TooManyAttemptsError(wait));
    const given = bearerToken(req);
    if (!given)
      return next(new HttpError('unauthorized', 'admin endpoints need Authorization: Bearer <ADMIN_TOKEN>'));
    if (!isAdmin(given)) {
      failures?.fail(address, now);
      return next(new HttpError('forbidden', 'wrong admin token'));
    }
    next();
  };
}
