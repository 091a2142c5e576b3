// Structured JSON logs (pino). One logger per process, level from LOG_LEVEL; each HTTP request gets a
// child logger carrying its request id (src/http/request-log.ts). Code that runs on behalf of a
// request without being handed its logger (hooks such as the intake's enqueue-error report) asks
// requestLogger() for it, so its lines carry the request id too.
import { AsyncLocalStorage } from 'node:async_hooks';
import { type DestinationStream, pino } from 'pino';

export type Logger = pino.Logger;

export function createLogger(level: string, destination?: DestinationStream): Logger {
  const options = { level, base: { service: 'flashsale' } };
  return destination ? pino(options, destination) : pino(options);
}

export interface RequestContext {
  /** The request's logger (its lines carry reqId); may be made on first read. */
  readonly log: Logger;
}

/** The request being served on the current async path (set by the request-id middleware). */
export const requestContext = new AsyncLocalStorage<RequestContext>();

/** The current request's logger (its lines carry reqId), or `fallback` outside a request. */
export function requestLogger(fallback: Logger): Logger {
  return requestContext.getStore()?.log ?? fallback;
}
