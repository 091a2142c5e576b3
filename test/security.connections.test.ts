// Connections (issue 25): a client that trickles its headers is cut once HTTP_HEADERS_TIMEOUT_MS has
// passed; one address cannot hold more than HTTP_MAX_CONNECTIONS_PER_ADDRESS connections (loopback,
// this host itself, is not capped); with METRICS_PORT, /metrics is served there and not on the API
// port, bound to METRICS_HOST.
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { connect, type Socket } from 'node:net';
import { networkInterfaces } from 'node:os';
import { after, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { freePort } from '../harness/redis-server.ts';
import { call } from '../harness/service.ts';
import { useService } from './support/suite.ts';

const metricsPort = await freePort();
/** An address of this machine that is not loopback: the client the cap applies to. */
const outside = Object.values(networkInterfaces())
  .flat()
  .find((a) => a && a.family === 'IPv4' && !a.internal)?.address;
const { svc } = useService({
  // On every interface, so that a client can come from an address that is not loopback.
  HOST: '0.0.0.0',
  HTTP_HEADERS_TIMEOUT_MS: '500',
  HTTP_BODY_TIMEOUT_MS: '2000',
  HTTP_REQUEST_TIMEOUT_MS: '5000',
  HTTP_CONNECTIONS_CHECK_MS: '100',
  HTTP_MAX_CONNECTIONS_PER_ADDRESS: '4',
  METRICS_PORT: String(metricsPort),
  // The API on every interface, its metrics on loopback only.
  METRICS_HOST: '127.0.0.1',
});

const sockets: Socket[] = [];
after(() => {
  for (const s of sockets) s.destroy();
});

async function open(host?: string): Promise<Socket> {
  const url = new URL(svc.url);
  const socket = connect(Number(url.port), host ?? url.hostname);
  sockets.push(socket);
  socket.on('error', () => {});
  await once(socket, 'connect');
  return socket;
}

/** Resolves with what the server sent once it closed the socket. */
function closed(socket: Socket): Promise<string> {
  let received = '';
  socket.on('data', (d: Buffer) => {
    received += d.toString();
  });
  return new Promise((resolve) => socket.once('close', () => resolve(received)));
}

describe('connections', () => {
  it('a client trickling its headers is cut (408) within the header timeout, whatever it keeps sending', async () => {
    const socket = await open();
    const done = closed(socket);
    socket.write('GET /healthz HTTP/1.1\r\nHost: localhost\r\n');
    let cut = false;
    void done.then(() => {
      cut = true;
    });
    // One header line at a time, never the blank line that ends them, until the server hangs up.
    for (let i = 0; !cut && i < 10_000; i++) {
      if (!socket.destroyed) socket.write(`X-Slow-${i}: a\r\n`);
      await Promise.race([sleep(50), done]);
    }
    assert.match(await done, /^HTTP\/1\.1 408/);
  });

  it('one address gets at most HTTP_MAX_CONNECTIONS_PER_ADDRESS connections; the held ones still work', async (t) => {
    if (!outside) {
      t.skip('this machine has no address but loopback, and loopback is not capped');
      return;
    }
    // Opened one after another, so the server has counted each before the next (nothing else of this
    // test holds a connection to the API now).
    const held: Socket[] = [];
    for (let i = 0; i < 4; i++) held.push(await open(outside));
    const extra = await open(outside);
    // The fifth is closed by the server at once, before it sent a byte.
    assert.equal(await closed(extra), '');
    const first = held[0] as Socket;
    const answer = closed(first);
    first.end('GET /healthz HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n');
    assert.match(await answer, /^HTTP\/1\.1 200/);
    for (const s of held) s.destroy();
  });

  it('loopback (this host: a local proxy, a load test) is not capped', async () => {
    const held: Socket[] = [];
    for (let i = 0; i < 8; i++) held.push(await open('127.0.0.1'));
    const last = held[7] as Socket;
    const answer = closed(last);
    last.end('GET /healthz HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n');
    assert.match(await answer, /^HTTP\/1\.1 200/);
    for (const s of held) s.destroy();
  });

  it('METRICS_PORT: /metrics is served on its own port, not on the API port', async () => {
    const api = await call(svc.url, 'GET', '/metrics');
    assert.equal(api.status, 404);
    const res = await fetch(`http://127.0.0.1:${metricsPort}/metrics`);
    assert.equal(res.status, 200);
    assert.match(await res.text(), /flashsale_/);
  });

  it('METRICS_HOST: the metrics port listens on that address only, while the API is on every one', async (t) => {
    if (!outside) {
      t.skip('this machine has no address but loopback');
      return;
    }
    const apiOutside = await fetch(`http://${outside}:${new URL(svc.url).port}/healthz`);
    assert.equal(apiOutside.status, 200);
    const refused = await fetch(`http://${outside}:${metricsPort}/metrics`).then(
      () => 'answered',
      (err: Error & { cause?: { code?: string } }) => err.cause?.code,
    );
    assert.equal(refused, 'ECONNREFUSED');
  });
});
