// Request ids and request logs (a small stand-in for pino-http). Every request gets an id: the
// caller's X-Request-Id when it is sane, else a fresh UUID; it is echoed in the X-Request-Id
// response header and carried by every line logged through req.log (no AsyncLocalStorage: one
// enabled runs a hook on every promise of the process). One line per request when it ends: at debug for anything under
// 500 (so a flash sale logs nothing per order at info), warn for 503, error for other 5xx; admin
// changes at info.
import { randomUUID } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import type { Request, RequestHandler } from 'express';
import type { Logger } from '../log.ts';

declare global {
  namespace Express {
    interface Request {
      /** Request id: the caller's X-Request-Id if sane, else a UUID. */
      id: string;
      /** Logger whose lines carry this request's id (reqId). */
      log: Logger;
    }
  }
}

const REQUEST_ID_HEADER = 'X-Request-Id';
/** Ids taken from callers: trace-id-like tokens only (no spaces, quotes or control characters). */
const SANE_REQUEST_ID = /^[A-Za-z0-9._:@/+=-]{1,128}$/;

export function requestId(header: string | undefined): string {
  return header !== undefined && SANE_REQUEST_ID.test(header) ? header : randomUUID();
}

const BASE = Symbol('request logger base');
const CHILD = Symbol('request logger');
type WithLogger = Request & { [BASE]?: Logger; [CHILD]?: Logger };

/**
 * `req.log` as a getter of the app's request prototype: the child logger (a copy of the bindings per
 * request) is made when a line is logged, which an order answered 2xx/4xx at info never does.
 */
function lazyLog(req: Request): void {
  const proto = Object.getPrototypeOf(req) as object;
  if (Object.hasOwn(proto, 'log')) return;
  Object.defineProperty(proto, 'log', {
    configurable: true,
    get(this: WithLogger): Logger {
      this[CHILD] ??= (this[BASE] as Logger).child({ reqId: this.id });
      return this[CHILD];
    },
    set(this: WithLogger, log: Logger) {
      this[CHILD] = log;
    },
  });
}

export function requestLog(logger: Logger): RequestHandler {
  return (req, res, next) => {
    const id = requestId(req.get(REQUEST_ID_HEADER));
    lazyLog(req);
    req.id = id;
    (req as WithLogger)[BASE] = logger;
    res.setHeader(REQUEST_ID_HEADER, id);
    const started = performance.now();
    // 'close' follows 'finish' on a completed answer, and comes alone on an aborted one: one listener.
    res.once('close', () => {
      const status = res.statusCode;
      const adminChange = req.method !== 'GET' && req.originalUrl.startsWith('/admin/') && status < 400;
      const line = { method: req.method, path: req.originalUrl, status, started };
      logAnswer(logger, line, { adminChange, aborted: !res.writableFinished, log: () => req.log });
    });
    next();
  };
}

/** What a request's log line says. */
export interface AnswerLine {
  method: string | undefined;
  path: string | undefined;
  status: number;
  /** performance.now() when the request was read. */
  started: number;
}

/**
 * The one line a request logs when answered: at debug for anything under 500 (so a flash sale logs
 * nothing per order at info), warn for 503, error for other 5xx, admin changes at info. `log` makes
 * the logger carrying the request id, only when a line is written.
 */
export function logAnswer(
  logger: Logger,
  a: AnswerLine,
  o: { adminChange?: boolean; aborted?: boolean; log: () => Logger },
): void {
  // At info an order's 2xx/4xx logs nothing: no line is even built.
  if (a.status < 500 && !o.adminChange && !logger.isLevelEnabled('debug')) return;
  const line = {
    method: a.method,
    path: a.path,
    status: a.status,
    ms: Math.round((performance.now() - a.started) * 100) / 100,
    ...(o.aborted ? { aborted: true } : {}),
  };
  const log = o.log();
  if (a.status >= 500) {
    if (a.status === 503) log.warn(line, 'request failed: unavailable');
    else log.error(line, 'request failed');
  } else if (o.adminChange) {
    log.info(line, 'admin change');
  } else {
    log.debug(line, o.aborted ? 'request aborted by the client' : 'request done');
  }
}
