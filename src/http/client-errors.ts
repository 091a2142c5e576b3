// Requests Node's HTTP parser refuses before the app sees them (a body cut short of its
// Content-Length, malformed or oversized headers, a request too slow to arrive), and CONNECT, which
// Node never gives the app: answered in the service's error shape ({error, message}) instead of
// Node's bare status line or a closed connection.
import { type Server, STATUS_CODES } from 'node:http';
import type { Duplex } from 'node:stream';
import { errorAnswer, HttpError } from './errors.ts';
import { SERVER_METHODS } from './request-target.ts';
import { MethodNotAllowedError } from './routes/allow.ts';

function refusal(code: string | undefined): HttpError {
  switch (code) {
    case 'HPE_HEADER_OVERFLOW':
      return new HttpError('headers_too_large', 'request headers too large');
    case 'HPE_CHUNK_EXTENSIONS_OVERFLOW':
      return new HttpError('payload_too_large', 'chunk extensions too large');
    case 'ERR_HTTP_REQUEST_TIMEOUT':
      return new HttpError('request_timeout', 'the request did not arrive in time');
    default:
      return new HttpError(
        'invalid_request',
        'malformed HTTP request (or a body cut short of its Content-Length)',
      );
  }
}

export function answerClientErrors(server: Server): void {
  server.on('clientError', (err: NodeJS.ErrnoException, socket: Duplex) => {
    // A reset connection has no one left to answer; a request already answered (its body then broke
    // off) must not get a second answer. (Node's own handler checks the same.)
    const answering = (socket as { _httpMessage?: { headersSent?: boolean } })._httpMessage;
    if (err.code === 'ECONNRESET' || !socket.writable || answering?.headersSent) {
      socket.destroy();
      return;
    }
    answerRaw(socket, refusal(err.code));
  });
  // Not a proxy: a tunnel is refused like any method the service does not have.
  server.on('connect', (req: { url?: string }, socket: Duplex) => {
    answerRaw(socket, new MethodNotAllowedError('CONNECT', req.url ?? '', SERVER_METHODS));
  });
}

/** Writes `err`'s answer on the bare socket and closes it. */
function answerRaw(socket: Duplex, err: HttpError): void {
  const { status, body, headers } = errorAnswer(err);
  const json = JSON.stringify(body);
  const extra = Object.entries(headers)
    .map(([name, value]) => `${name}: ${value}\r\n`)
    .join('');
  socket.end(
    `HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\nContent-Type: application/json; charset=utf-8\r\n` +
      `${extra}Content-Length: ${Buffer.byteLength(json)}\r\nConnection: close\r\n\r\n${json}`,
  );
}
