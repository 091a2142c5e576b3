// How a route is matched: its path exactly (case-sensitive, no trailing slash), and the answer for a
// known path asked with a method it does not have: 405 with the methods it has.
import express, { type RequestHandler, type Router } from 'express';
import { HttpError } from '../errors.ts';

/** A known path asked with another method; the answer's Allow header lists the methods it has. */
export class MethodNotAllowedError extends HttpError {
  readonly headers: Record<string, string>;

  constructor(method: string, path: string, allow: string) {
    super('method_not_allowed', `${method} is not allowed on ${path}; allowed: ${allow}`, { allow });
    this.headers = { Allow: allow };
  }
}

/**
 * A router matching paths as written: `/API/ORDERS` or `/healthz/` are not the routes, so what a route
 * runs never depends on a path's spelling (request-target.ts refuses the other spellings before).
 */
export function exactRouter(): Router {
  return express.Router({ caseSensitive: true, strict: true });
}

/** Mount with route.all() after a path's handlers: refuses every other method. GET brings HEAD. */
export function onlyMethods(...methods: string[]): RequestHandler {
  const allow = (methods.includes('GET') ? [...methods, 'HEAD'] : methods).join(', ');
  return (req, _res, next) =>
    next(new MethodNotAllowedError(req.method, req.originalUrl.split('?')[0] ?? '', allow));
}
