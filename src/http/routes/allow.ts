// The answer for a known path asked with a method it does not have: 405 with the methods it has.
import type { RequestHandler } from 'express';
import { HttpError } from '../errors.ts';

/** A known path asked with another method; the answer's Allow header lists the methods it has. */
export class MethodNotAllowedError extends HttpError {
  readonly headers: Record<string, string>;

  constructor(method: string, path: string, allow: string) {
    super('method_not_allowed', `${method} is not allowed on ${path}; allowed: ${allow}`, { allow });
    this.headers = { Allow: allow };
  }
}

/** Mount with route.all() after a path's handlers: refuses every other method. GET brings HEAD. */
export function onlyMethods(...methods: string[]): RequestHandler {
  const allow = (methods.includes('GET') ? [...methods, 'HEAD'] : methods).join(', ');
  return (req, _res, next) =>
    next(new MethodNotAllowedError(req.method, req.originalUrl.split('?')[0] ?? '', allow));
}
