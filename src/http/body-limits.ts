// Bodies refused as soon as they are known to be refused: over the limit from Content-Length at once,
// or as soon as more than the limit arrived; and one that trickles, at its own timeout. Connection closed.
import type { IncomingMessage, ServerResponse } from 'node:http';
import { send } from './answers.ts';
import { errorAnswer, HttpError } from './errors.ts';

/** The largest body any route takes (the JSON reader's limit, body.ts). */
export const MAX_BODY_BYTES = 16 * 1024;

export interface BodyLimits {
  /** Bytes a body may have on the wire. */
  maxBytes: number;
  /** Longest a body may take to arrive, from its headers (HTTP_BODY_TIMEOUT_MS). */
  timeoutMs: number;
}

/**
 * Guards the body of `req` until it has all arrived. Without it a body over the limit is read to its
 * end before its 413 (the JSON reader drains it to keep the connection), which for a body that never
 * ends is until `requestTimeout`: one such connection pushed 3.3 GB in 10 s at 7 s of CPU. Here a
 * Content-Length over `maxBytes` is refused before a byte is read, a body that passes `maxBytes` as
 * soon as it does (chunked bodies have no length to check), and one not all there `timeoutMs` after
 * its headers is 408. A refusal is answered once, with `Connection: close`, the socket no longer read
 * and destroyed once the answer is written: the rest of the body is never read. A body refused after
 * its request was answered (a route that answered without reading it) only has its socket destroyed.
 * Returns false when the body was refused at once (nothing more to do for the request).
 *
 * @example
 * if (!guardBody(req, res, { maxBytes: MAX_BODY_BYTES, timeoutMs: 5000 })) return;
 */
export function guardBody(req: IncomingMessage, res: ServerResponse, limits: BodyLimits): boolean {
  const length = req.headers['content-length'];
  if (length !== undefined && Number(length) > limits.maxBytes) {
    refuse(req, res, tooLarge(limits.maxBytes));
    return false;
  }
  // No body (GET, an empty POST): nothing to guard, no timer to set.
  if (req.headers['transfer-encoding'] === undefined && (length === undefined || Number(length) === 0))
    return true;
  let received = 0;
  const stop = () => {
    clearTimeout(timer);
    req.off('data', count);
  };
  const count = (chunk: Buffer) => {
    received += chunk.length;
    if (received > limits.maxBytes) {
      stop();
      refuse(req, res, tooLarge(limits.maxBytes));
    }
  };
  const timer = setTimeout(() => {
    stop();
    refuse(req, res, new HttpError('body_timeout', `the body did not arrive within ${limits.timeoutMs} ms`));
  }, limits.timeoutMs);
  // prependListener, not on: it does not start the flow, so no chunk goes by before the route's
  // reader listens; a body nobody reads flows only when node discards it after the answer.
  req.prependListener('data', count);
  req.once('end', stop);
  req.once('close', stop);
  return true;
}

function tooLarge(maxBytes: number): HttpError {
  return new HttpError('payload_too_large', `body larger than ${maxBytes / 1024} kB`);
}

/** Answers `err` with Connection: close and stops reading; the socket goes once the answer is out. */
function refuse(req: IncomingMessage, res: ServerResponse, err: HttpError): void {
  const socket = req.socket;
  // Not another byte of this body: the kernel's window fills and the sender waits, at no CPU here.
  socket.pause();
  if (res.headersSent) {
    socket.destroy();
    return;
  }
  res.setHeader('Connection', 'close');
  res.once('finish', () => socket.destroy());
  send(res, errorAnswer(err));
}
