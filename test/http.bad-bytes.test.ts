// Issue 26, "no input gives 500": bytes the transport cannot read get a 4xx with a code and change
// nothing — bodies that are not what their Content-Encoding says (gzip, deflate, br), bodies cut short,
// bytes that are not UTF-8, paths with malformed percent-encoding; and the admin token is checked
// before an admin body is read.
import assert from 'node:assert/strict';
import { connect } from 'node:net';
import { describe, it } from 'node:test';
import { brotliCompressSync, deflateSync, gzipSync } from 'node:zlib';
import { admin, call, type Reply, reply } from '../harness/service.ts';
import { useBadInput } from './support/bad-input.ts';

const { api, existingOrderId, assertUnchanged, assertRefused } = useBadInput();

const ENDPOINTS: Array<{
  method: string;
  path: () => string;
  headers: Record<string, string>;
  body: object;
}> = [
  { method: 'POST', path: () => '/api/orders', headers: {}, body: { productId: 'live', userId: 'u-enc' } },
  {
    method: 'POST',
    path: () => `/api/orders/${existingOrderId()}/pay`,
    headers: {},
    body: { userId: 'alice' },
  },
  {
    method: 'POST',
    path: () => `/api/orders/${existingOrderId()}/cancel`,
    headers: {},
    body: { userId: 'alice' },
  },
  { method: 'PUT', path: () => '/admin/products/live', headers: admin, body: { stock: 1, shards: 1 } },
  { method: 'POST', path: () => '/admin/products/live/restock', headers: admin, body: { delta: 5 } },
  { method: 'POST', path: () => '/admin/products/live/reshard', headers: admin, body: { shards: 3 } },
];

async function send(
  method: string,
  path: string,
  body: Buffer,
  headers: Record<string, string>,
): Promise<Reply> {
  return reply(
    await fetch(`${api.url}${path}`, {
      method,
      headers: { 'content-type': 'application/json', ...headers },
      body: new Uint8Array(body),
    }),
  );
}

const COMPRESS = { gzip: gzipSync, deflate: deflateSync, br: brotliCompressSync };

describe('bodies that do not decode', () => {
  it('Content-Encoding gzip, deflate or br over bytes that are not so encoded: 400 invalid_encoding', async () => {
    for (const ep of ENDPOINTS) {
      const json = Buffer.from(JSON.stringify(ep.body));
      for (const [encoding, compress] of Object.entries(COMPRESS)) {
        const valid = compress(json);
        for (const [what, body] of [
          ['plain JSON', json],
          ['cut in half', valid.subarray(0, Math.ceil(valid.length / 2))],
          ['bit flipped', Buffer.from(valid.map((b, i) => (i === 3 ? b ^ 0xff : b)))],
          ['random bytes', Buffer.from([0x1f, 0x8b, 0x08, 0x00, 0xde, 0xad, 0xbe, 0xef, 0x00, 0x01])],
        ] as const) {
          const r = await send(ep.method, ep.path(), body, { ...ep.headers, 'content-encoding': encoding });
          assertRefused(r, 400, 'invalid_encoding', `${ep.method} ${ep.path()} ${encoding} ${what}`);
        }
      }
    }
    await assertUnchanged('bodies not encoded as they say');
  });

  it('an encoding the service does not take: 415 unsupported_media_type', async () => {
    for (const encoding of ['compress', 'x-unknown', 'gzip, identity']) {
      const r = await send('POST', '/api/orders', Buffer.from('{}'), { 'content-encoding': encoding });
      assertRefused(r, 415, 'unsupported_media_type', encoding);
    }
    await assertUnchanged('unsupported encodings');
  });

  it('bytes that are not UTF-8: 400 invalid_encoding (not decoded into replacement characters)', async () => {
    const bad = [
      Buffer.concat([
        Buffer.from('{"productId":"live","userId":"u'),
        Buffer.from([0xff, 0xfe]),
        Buffer.from('"}'),
      ]),
      Buffer.concat([Buffer.from('{"productId":"live","userId":"'), Buffer.from([0xc3]), Buffer.from('"}')]),
      Buffer.concat([
        Buffer.from('{"stock":1,"shards":1,"n":"'),
        Buffer.from([0xed, 0xa0, 0x80]),
        Buffer.from('"}'),
      ]),
    ];
    for (const ep of ENDPOINTS) {
      for (const body of bad) {
        const r = await send(ep.method, ep.path(), body, ep.headers);
        assertRefused(r, 400, 'invalid_encoding', `${ep.method} ${ep.path()} ${body.toString('hex')}`);
      }
    }
    await assertUnchanged('not UTF-8');
  });

  it('a body cut short of its Content-Length (the client stops sending): 400 invalid_request, nothing placed', async () => {
    const body = JSON.stringify({ productId: 'live', userId: 'u-short' });
    for (const [method, path, headers] of [
      ['POST', '/api/orders', ''],
      ['PUT', '/admin/products/live', `Authorization: ${admin.authorization}\r\n`],
    ] as const) {
      const answer = await rawExchange(
        `${method} ${path} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n${headers}` +
          `Content-Length: ${body.length + 20}\r\nConnection: close\r\n\r\n${body}`,
      );
      assert.deepEqual(firstAnswer(answer), { status: '400', code: 'invalid_request' }, answer);
    }
    await assertUnchanged('truncated bodies');
  });
});

describe('requests the HTTP parser refuses', () => {
  it('a malformed request head: 400 invalid_request; headers too large: 431 headers_too_large', async () => {
    for (const [request, status, code] of [
      ['GET /healthz HTTP/1.1\r\nHost: x\r\nno colon here\r\n\r\n', '400', 'invalid_request'],
      [
        'POST /api/orders HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\nContent-Length: 3\r\n\r\n{}',
        '400',
        'invalid_request',
      ],
      [
        'POST /api/orders HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n',
        '400',
        'invalid_request',
      ],
      [
        `GET /healthz HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(20_000)}\r\n\r\n`,
        '431',
        'headers_too_large',
      ],
    ] as const) {
      const answer = await rawExchange(request);
      assert.deepEqual(firstAnswer(answer), { status, code }, answer.slice(0, 300));
    }
    await assertUnchanged('malformed requests');
  });
});

describe('the admin door before the body', () => {
  it('an admin body that does not decode, without the token: 401, not a decoding answer (one too large: 413 before anything)', async () => {
    for (const ep of ENDPOINTS.filter((e) => e.headers === admin)) {
      const odd: Array<Record<string, string>> = [
        { 'content-encoding': 'gzip' },
        { 'content-type': 'application/json; charset=koi8-r' },
      ];
      for (const headers of odd) {
        const r = await send(ep.method, ep.path(), Buffer.from('not gzip'), headers);
        assertRefused(r, 401, 'unauthorized', `${ep.method} ${ep.path()} ${JSON.stringify(headers)}`);
      }
      // Over the size every route takes: refused from its Content-Length, token or not, none of it read.
      const tooBig = await send(ep.method, ep.path(), Buffer.alloc(100_000, 0x20), {});
      assertRefused(tooBig, 413, 'payload_too_large', `${ep.method} ${ep.path()} 100 kB`);
    }
    await assertUnchanged('admin bodies without a token');
  });
});

describe('paths that do not decode', () => {
  it('malformed percent-encoding in a path parameter: 400 invalid_request on every endpoint', async () => {
    for (const bad of ['%E0%A4%A', '%', '%zz', '%C3', 'a%ED%A0%80']) {
      const replies: Array<[string, Reply]> = [
        ['GET product', await call(api.url, 'GET', `/api/products/${bad}`)],
        ['GET order', await call(api.url, 'GET', `/api/orders/${bad}`)],
        ['pay', await call(api.url, 'POST', `/api/orders/${bad}/pay`, { userId: 'alice' })],
        ['cancel', await call(api.url, 'POST', `/api/orders/${bad}/cancel`, { userId: 'alice' })],
        ['admin GET', await call(api.url, 'GET', `/admin/products/${bad}`, undefined, admin)],
        ['PUT', await call(api.url, 'PUT', `/admin/products/${bad}`, { stock: 1, shards: 1 }, admin)],
        ['restock', await call(api.url, 'POST', `/admin/products/${bad}/restock`, { delta: 1 }, admin)],
        ['reshard', await call(api.url, 'POST', `/admin/products/${bad}/reshard`, { shards: 2 }, admin)],
        ['reconcile', await call(api.url, 'GET', `/admin/products/${bad}/reconcile`, undefined, admin)],
        ['live', await call(api.url, 'GET', `/admin/products/${bad}/live`, undefined, admin)],
      ];
      for (const [what, r] of replies) assertRefused(r, 400, 'invalid_request', `${what} ${bad}`);
      const noToken = await call(api.url, 'GET', `/admin/products/${bad}`);
      assertRefused(noToken, 401, 'unauthorized', `admin GET ${bad} without a token`);
    }
    await assertUnchanged('malformed percent-encoding');
  });
});

/** Sends `request` on a fresh connection, half-closes it, and returns whatever comes back. */
function rawExchange(request: string): Promise<string> {
  const { hostname, port } = new URL(api.url);
  return new Promise((resolve, reject) => {
    let answer = '';
    const socket = connect({ host: hostname, port: Number(port) }, () => socket.end(request));
    socket.on('data', (d: Buffer) => {
      answer += d.toString();
    });
    socket.on('error', (err: NodeJS.ErrnoException) =>
      err.code === 'ECONNRESET' ? resolve(answer) : reject(err),
    );
    socket.on('close', () => resolve(answer));
  });
}

/** The status and error code of the first answer in raw response bytes. */
function firstAnswer(raw: string): { status: string | undefined; code: unknown } {
  const [head = '', ...rest] = raw.split('\r\n\r\n');
  const length = Number(/\r\ncontent-length: (\d+)/i.exec(head)?.[1] ?? 0);
  const body = Buffer.from(rest.join('\r\n\r\n')).subarray(0, length).toString();
  return {
    status: /^HTTP\/1\.1 (\d{3})/.exec(head)?.[1],
    code: (JSON.parse(body) as { error?: unknown }).error,
  };
}
