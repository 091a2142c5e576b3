// Requests at the edge of HTTP get the service's JSON error answer like any other (issue 37): HTTP/1.1
// without Host (Node's bare 400 before), CONNECT (closed without an answer before) and OPTIONS on every
// path (express answered 200 for some dashboard files and 404 for others).
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { admin } from '../harness/service.ts';
import { firstAnswer, rawSocket, receivedUntilClose } from './support/raw-http.ts';
import { useService } from './support/suite.ts';

const { svc } = useService();

/** Sends `head` (a request without body, which closes its connection) and parses the answer. */
async function answer(head: string) {
  const socket = await rawSocket(svc.url);
  const received = receivedUntilClose(socket);
  socket.write(`${head}\r\nConnection: close\r\n\r\n`);
  const text = await received;
  return { ...firstAnswer(text), allow: /\r\nAllow: ([^\r]*)/i.exec(text)?.[1], text };
}

describe('answers at the edge of HTTP', () => {
  it('HTTP/1.1 without Host: 400 invalid_request in JSON; HTTP/1.0 needs none', async () => {
    const r = await answer('GET /healthz HTTP/1.1');
    assert.deepEqual([r.status, r.body.error], [400, 'invalid_request'], r.text);
    const old = await answer('GET /healthz HTTP/1.0');
    assert.deepEqual([old.status, old.body], [200, { status: 'ok' }]);
  });

  it('CONNECT: 405 method_not_allowed in JSON, with Allow', async () => {
    const r = await answer('CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443');
    assert.deepEqual([r.status, r.body.error], [405, 'method_not_allowed'], r.text);
    assert.ok(r.allow?.includes('GET'), r.text);
  });

  it('OPTIONS on every path: 405 in JSON with the Allow of the path (no CORS), the same for every dashboard file', async () => {
    const paths: Array<[string, string]> = [
      ['/dashboard/uPlot.iife.min.js', 'GET, HEAD'],
      ['/dashboard/uPlot.min.css', 'GET, HEAD'],
      ['/dashboard/app.js', 'GET, HEAD'],
      ['/dashboard/app.css', 'GET, HEAD'],
      ['/dashboard', 'GET, HEAD'],
      ['/healthz', 'GET, HEAD'],
      ['/api/products/x', 'GET, HEAD'],
      ['/api/orders/x.1.0.000000000000000000000000', 'GET, HEAD'],
      // Behind the admin token (without it: 401, as for every method).
      ['/admin/products/x', 'GET, PUT, HEAD'],
      ['*', 'GET, HEAD, POST, PUT'],
    ];
    for (const [path, allow] of paths) {
      const auth = path.startsWith('/admin') ? `\r\nAuthorization: ${admin.authorization}` : '';
      const r = await answer(`OPTIONS ${path} HTTP/1.1\r\nHost: localhost${auth}`);
      assert.deepEqual(
        [r.status, r.body.error, r.allow],
        [405, 'method_not_allowed', allow],
        `${path}: ${r.text}`,
      );
    }
  });
});
