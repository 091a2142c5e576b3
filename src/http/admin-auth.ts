// Admin authentication of the /admin routes: `Authorization: Bearer <ADMIN_TOKEN>` through the admin
// brake (admin-brake.ts). A missing and a wrong token answer the same 401; a braked address 429.
import type { IncomingMessage } from 'node:http';
import type { RequestHandler } from 'express';
import type { AdminBrake } from './admin-brake.ts';
import { HttpError } from './errors.ts';

/** The bearer token of the request's Authorization header; undefined without one. */
export function bearerToken(req: IncomingMessage): string | undefined {
  const m = /^Bearer\s+(.+)$/i.exec((req.headers.authorization ?? '').trim());
  return m?.[1];
}

/** Middleware: on for the admin token, else 401 `unauthorized` (429 `too_many_attempts` when braked). */
export function adminAuth(brake: AdminBrake): RequestHandler {
  return (req, _res, next) => {
    try {
      if (brake.admits(req.ip, bearerToken(req))) return next();
      next(
        new HttpError(
          'unauthorized',
          'admin endpoints need Authorization: Bearer <ADMIN_TOKEN> (missing or not the admin token)',
        ),
      );
    } catch (err) {
      next(err);
    }
  };
}
