// Lock test helpers: a private redis-server per file with lock clients closed after it, a guard against
// unhandled rejections, and a wait for watchdog renewals.
import assert from 'node:assert/strict';
import { after, before } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Redis } from 'ioredis';
import { RedisServer } from '../../../../harness/redis-server.ts';
import { handle } from '../../../../test/support/handle.ts';
import { LockClient, type LockClientOptions } from '../../src/index.ts';

const unhandled: unknown[] = [];
process.on('unhandledRejection', (reason) => unhandled.push(reason));
export function unhandledRejections(): unknown[] {
  return unhandled;
}

export interface LockServer {
  /** The file's private redis-server. */
  server: RedisServer;
  /** A connection of its own for assertions (made on first use). */
  admin: Redis;
  /** A lock client on a connection of its own (to this server unless told otherwise), closed after the tests. */
  newClient(options?: LockClientOptions, on?: RedisServer): { client: LockClient; redis: Redis };
  /** Closes `c` after the tests, before the server stops; returns it. */
  closeAfter<T extends { close(): Promise<void> }>(c: T): T;
}

/**
 * A private redis-server for a lock test file, started before its tests. After them every lock
 * client and whatever was given to closeAfter() is closed, the server stopped, and the file fails
 * if any promise rejection went unhandled meanwhile (`what`: the tests, for that message).
 */
export function useLockServer(what: string): LockServer {
  let server: RedisServer | undefined;
  let admin: Redis | undefined;
  const closers: Array<{ close(): Promise<void> }> = [];
  before(async () => {
    server = await RedisServer.start();
  });
  after(async () => {
    await Promise.all(closers.splice(0).map((c) => c.close()));
    await server?.stop();
    assert.deepEqual(unhandledRejections(), [], `no unhandled rejection during ${what}`);
  });
  const suite: LockServer = {
    server: handle('server', () => server),
    admin: handle('admin', () => (admin ??= server?.client())),
    newClient(options = {}, on = suite.server) {
      const redis = on.client();
      return { client: suite.closeAfter(new LockClient(redis, options)), redis };
    },
    closeAfter(c) {
      closers.push(c);
      return c;
    },
  };
  return suite;
}

/**
 * Waits until `key`'s PTTL has gone back up `n` times (n renewals by a watchdog), asserting at every
 * look that it is still there; `each` runs at every look too (e.g. "nobody else gets in").
 */
export async function renewals(
  redis: Redis,
  key: string,
  n: number,
  each?: () => Promise<void>,
): Promise<void> {
  let seen = 0;
  let last = await redis.pttl(key);
  while (seen < n) {
    const ttl = await redis.pttl(key);
    assert.ok(ttl > 0, `${key} still held after ${seen} renewal(s)`);
    if (ttl > last) seen += 1;
    last = ttl;
    await each?.();
    await sleep(10);
  }
}
