// The answer for a known path asked with a method it does not have: 405 with the methods it has.
import type { RequestHandler } from 'express';
import { HttpError } from '../errors.ts';

/** A known path asked with another method; `allow` is its Allow header. */
export class MethodNotAllowedError extends HttpError {
  constructor(
    method: string,
    path: string,
    readonly allow: string,
  ) {
    super('method_not_allowed', `${method} is not allowed on ${path}; allowed: ${allow}`, { allow });
  }
}

/** Mount with route.all() after a path's handlers: refuses every other method. GET brings HEAD. */
export function onlyMethods(...methods: string[]): RequestHandler {
  const allow = (methods.includes('GET') ? [...methods, 'HEAD'] : methods).join(', ');
  return (req, _res, next) =>
    next(new MethodNotAllowedError(req.method, req.originalUrl.split('?')[0] ?? '', allow));
}
