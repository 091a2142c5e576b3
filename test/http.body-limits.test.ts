// Bodies are refused as soon as they are known to be refused (issue 37): a Content-Length over the
// limit at once, before a byte of body; a chunked body that never ends as soon as it passes the
// limit; a trickled body at HTTP_BODY_TIMEOUT_MS, well before HTTP_REQUEST_TIMEOUT_MS. Each answered
// with a code and the connection closed. (Their CPU is measured by bench/order/refused-bodies.ts.)
import assert from 'node:assert/strict';
import type { Socket } from 'node:net';
import { describe, it } from 'node:test';
import { admin, call, createSale, placeOrder } from '../harness/service.ts';
import { firstAnswer, rawSocket, receivedUntilClose } from './support/raw-http.ts';
import { useService } from './support/suite.ts';

// The request timeout far above the body's: a body cut here was cut by its own timeout.
const { svc } = useService({
  HTTP_BODY_TIMEOUT_MS: '300',
  HTTP_REQUEST_TIMEOUT_MS: '60000',
  HTTP_HEADERS_TIMEOUT_MS: '30000',
});

const head = (method: string, path: string, headers: string[]) =>
  [
    `${method} ${path} HTTP/1.1`,
    'Host: localhost',
    'Content-Type: application/json',
    ...headers,
    '',
    '',
  ].join('\r\n');

/** Writes chunks of a chunked body for as long as the server keeps the socket open. */
async function endlessChunks(socket: Socket): Promise<void> {
  const chunk = `4000\r\n${'x'.repeat(0x4000)}\r\n`;
  while (!socket.destroyed && socket.writable) {
    if (!socket.write(chunk)) {
      await new Promise((resolve) => {
        socket.once('drain', resolve);
        socket.once('close', resolve);
      });
    }
  }
}

/** What the service answered a request whose head is `request`, the body then written by `body`. */
async function answerTo(request: string, body?: (socket: Socket) => Promise<void>) {
  const socket = await rawSocket(svc.url);
  const received = receivedUntilClose(socket);
  socket.write(request);
  await body?.(socket);
  return firstAnswer(await received);
}

const HUGE = 'Content-Length: 100000000000';
const CHUNKED = 'Transfer-Encoding: chunked';
const AUTH = `Authorization: ${admin.authorization}`;

describe('bodies refused early', { timeout: 120_000 }, () => {
  it('a Content-Length over the limit: 413 at once, before any body is sent, and the connection closed', async () => {
    for (const path of ['/admin/products/big', '/api/orders/big.1.0.000000000000000000000000/pay']) {
      const method = path.startsWith('/admin') ? 'PUT' : 'POST';
      // No byte of body is ever sent: an answer at all means it was refused from the header.
      const r = await answerTo(head(method, path, [HUGE, AUTH]));
      assert.deepEqual([r.status, r.body.error], [413, 'payload_too_large'], `${method} ${path}`);
    }
  });

  it('a chunked body that never ends: 413 once it passes the limit, and the connection closed', async () => {
    for (const path of ['/admin/products/endless', '/api/orders/endless.1.0.000000000000000000000000/pay']) {
      const method = path.startsWith('/admin') ? 'PUT' : 'POST';
      const r = await answerTo(head(method, path, [CHUNKED, AUTH]), endlessChunks);
      assert.deepEqual([r.status, r.body.error], [413, 'payload_too_large'], `${method} ${path}`);
    }
  });

  it('a trickled body: 408 body_timeout at HTTP_BODY_TIMEOUT_MS, not the request timeout, and nothing changed', async () => {
    await createSale(svc.url, 'trickle', { stock: 5, shards: 1 });
    const body = JSON.stringify({ stock: 9, shards: 1 });
    const put = head('PUT', '/admin/products/trickle', [`Content-Length: ${body.length}`, AUTH]);
    const r = await answerTo(put, async (socket) => {
      socket.write(body.slice(0, 5));
    });
    assert.deepEqual([r.status, r.body.error], [408, 'body_timeout']);
    assert.equal((await call(svc.url, 'GET', '/api/products/trickle')).body.available, 5);
    const placed = await placeOrder(svc.url, { productId: 'trickle', userId: 'after' });
    assert.equal(placed.status, 202, 'the service goes on answering');
  });
});

// For the order door (the lead's POST /api/orders, src/http/): the same refusals on the order route.
describe('POST /api/orders bodies refused early', { timeout: 120_000 }, () => {
  it('a huge Content-Length: 413 at once; an endless chunked body: 413 once past the limit', async () => {
    const huge = await answerTo(head('POST', '/api/orders', [HUGE]));
    assert.deepEqual([huge.status, huge.body.error], [413, 'payload_too_large']);
    const endless = await answerTo(head('POST', '/api/orders', [CHUNKED]), endlessChunks);
    assert.deepEqual([endless.status, endless.body.error], [413, 'payload_too_large']);
  });
});
