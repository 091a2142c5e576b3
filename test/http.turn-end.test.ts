// The lanes' answers are written at the end of the loop turn (src/http/turn-end.ts): not while the
// turn's requests are still being decided, every one of them once it ends, and a write that throws
// ends only its own response.
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { createServer, get, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { describe, it } from 'node:test';
import { writeAtTurnEnd } from '../src/http/turn-end.ts';

/** GET path; the status and body, or the error that ended the request. */
function fetchRaw(url: string): Promise<{ status: number; body: string } | Error> {
  return new Promise((resolve) => {
    get(url, (res: IncomingMessage) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => {
        body += c;
      });
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
    }).on('error', resolve);
  });
}

const ok = (text: string) => (r: ServerResponse) => {
  r.writeHead(200, { 'content-type': 'text/plain' });
  r.end(text);
};

describe('answers written at the end of the loop turn', () => {
  it('writes after the turn, every answer of it, and a throwing write ends only its own response', async () => {
    // The first request is held; the second hands both answers over in one turn: the first's write
    // throws, the second's must still go out. Neither is written before the turn ends.
    let held: ServerResponse | undefined;
    const unsentWhileDeciding: boolean[] = [];
    const server = createServer((req, res) => {
      if (req.url === '/first') {
        held = res;
        return;
      }
      const first = held as ServerResponse;
      writeAtTurnEnd(first, () => {
        throw new Error('a write that fails');
      });
      writeAtTurnEnd(res, ok('second'));
      unsentWhileDeciding.push(first.headersSent, res.headersSent);
    });
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    try {
      const first = fetchRaw(`${url}/first`);
      // The second request only once the first is held (observable state, not a sleep).
      while (!held) await new Promise((r) => setImmediate(r));
      const second = await fetchRaw(`${url}/second`);
      assert.deepEqual(second, { status: 200, body: 'second' });
      assert.ok((await first) instanceof Error, 'the throwing write ends its own response');
      assert.deepEqual(unsentWhileDeciding, [false, false]);
    } finally {
      server.close();
      server.closeAllConnections();
    }
  });
});
