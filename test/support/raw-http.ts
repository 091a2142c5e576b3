// Requests sent byte for byte as a test writes them (fetch would normalize a path's dots, and cannot
// send an absolute-form target or a body that never ends): node:http for whole requests, sockets for the rest.
import { once } from 'node:events';
import { request } from 'node:http';
import { connect, type Socket } from 'node:net';

export interface RawReply {
  status: number;
  body: Record<string, unknown>;
  headers: Record<string, string | string[] | undefined>;
}

/** `method target` as written (any path spelling, or a URL), with `body`; resolves with the answer. */
export function rawRequest(
  base: string,
  method: string,
  target: string,
  body = '',
  headers: Record<string, string> = {},
): Promise<RawReply> {
  const url = new URL(base);
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host: url.hostname,
        port: url.port,
        method,
        path: target,
        headers: {
          'content-type': 'application/json',
          'content-length': Buffer.byteLength(body),
          ...headers,
        },
      },
      (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (d: string) => {
          text += d;
        });
        res.on('end', () => {
          let parsed: Record<string, unknown>;
          try {
            parsed = text === '' ? {} : JSON.parse(text);
          } catch {
            parsed = { raw: text };
          }
          resolve({ status: res.statusCode ?? 0, body: parsed, headers: res.headers });
        });
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

/** A socket to the service at `base`, its errors ignored (a test reads what the server did). */
export async function rawSocket(base: string): Promise<Socket> {
  const url = new URL(base);
  const socket = connect(Number(url.port), url.hostname);
  socket.on('error', () => {});
  await once(socket, 'connect');
  return socket;
}

/** Resolves with everything the server sent on `socket` once it closed it. */
export function receivedUntilClose(socket: Socket): Promise<string> {
  let received = '';
  socket.on('data', (d: Buffer) => {
    received += d.toString('latin1');
  });
  return new Promise((resolve) => socket.once('close', () => resolve(received)));
}

/** The status and JSON body of the first answer in `received` (raw HTTP/1.1 bytes). */
export function firstAnswer(received: string): { status: number; body: Record<string, unknown> } {
  const status = Number(/^HTTP\/1\.1 (\d{3})/.exec(received)?.[1] ?? 0);
  const start = received.indexOf('\r\n\r\n');
  const text = start === -1 ? '' : received.slice(start + 4);
  try {
    return { status, body: JSON.parse(text) };
  } catch {
    return { status, body: { raw: text } };
  }
}
