// The failures the peers' users report (Redisson, node-redlock, redis-semaphore), as our regression
// tests: each names the peer issue and would fail on a library with that bug. Private redis-servers.
import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import type { Redis } from 'ioredis';
import { track, until } from '../../../harness/async.ts';
import { RedisServer } from '../../../harness/redis-server.ts';
import {
  FairLock,
  LockClient,
  type LockClientOptions,
  LockError,
  LockLostError,
  LockNotHeldError,
  RedLock,
} from '../src/index.ts';
import { fairKeys, lockKeys } from '../src/keys.ts';
import { unhandledRejections } from './support/lock.ts';

const servers: RedisServer[] = [];
const closers: Array<{ close(): Promise<void> }> = [];

after(async () => {
  await Promise.all(closers.map((c) => c.close()));
  await Promise.all(servers.map((s) => s.stop()));
  assert.deepEqual(unhandledRejections(), [], 'no unhandled rejection during the peer-bug tests');
});

async function privateServer(): Promise<{ server: RedisServer; admin: Redis }> {
  const server = await RedisServer.start();
  servers.push(server);
  return { server, admin: server.client() };
}

function closeAfter<T extends { close(): Promise<void> }>(c: T): T {
  closers.push(c);
  return c;
}

function client(server: RedisServer, options: LockClientOptions = {}): LockClient {
  return closeAfter(new LockClient(server.client(), options));
}

describe('Redisson #5761, #5762: a waiter whose wake-up message is lost', () => {
  // Both modes: normal (the release frees the lock and wakes the waiter) and starvation (hands it over).
  for (const starvationMs of [600_000, 0]) {
    it(`its pub/sub connection dropped mid-wait, still gets the lock by its heartbeat (starvationMs ${starvationMs})`, async () => {
      const { server, admin } = await privateServer();
      const name = `peer:lost-wake:${starvationMs}`;
      const holder = client(server, { starvationMs });
      // A subscriber that never comes back: whatever the release publishes, this waiter never hears.
      const sub = server.client({ lazyConnect: true, autoResubscribe: false, retryStrategy: () => null });
      const waiter = client(server, { subscriber: sub });
      // The holder's lease outlasts the test: only the release can free it, and its message is lost.
      const held = await holder.acquire(name, { leaseMs: 600_000 });
      const wait = track(waiter.acquire(name, { waitMs: 60_000, leaseMs: 10_000 }));
      await until('the waiter queued', async () => (await admin.zcard(lockKeys(name).queue)) === 1);
      await admin.client('KILL', 'TYPE', 'pubsub');
      await until('the waiter’s subscriber gone', async () => sub.status === 'end');
      await held.release();
      const h = await wait.promise;
      assert.equal(await admin.hget(name, h.owner), '1');
      await h.release();
    });
  }
});

describe('Redisson #1104, #3730, #4661, #5019: a crashed fair-lock waiter', () => {
  it('at the head of the queue leaves no entry that blocks the waiters behind it', async () => {
    const { server, admin } = await privateServer();
    const name = 'peer:fair-crash';
    const k = fairKeys(name);
    const holderClient = client(server);
    const holder = new FairLock(holderClient);
    const held = await holder.acquire(name, { leaseMs: 600_000 });
    // The doomed waiter: its connections are cut without a withdrawal, as when its process dies.
    const doomedRedis = server.client();
    const doomed = new LockClient(doomedRedis);
    const dead = new FairLock(doomed).acquire(name, { waitMs: 2_000, leaseMs: 600_000 });
    dead.catch(() => {});
    await until('the doomed waiter queued', async () => (await admin.zcard(k.queue)) === 1);
    const later = new FairLock(client(server));
    const next = track(later.acquire(name, { waitMs: 60_000, leaseMs: 10_000 }));
    await until('the later waiter queued', async () => (await admin.zcard(k.queue)) === 2);
    doomedRedis.disconnect();
    await doomed.close();
    await held.release();
    const h = await next.promise;
    assert.equal(await admin.hget(name, h.owner), '1');
    await h.release();
    assert.equal(await admin.exists(k.queue), 0, 'no queue entry left behind');
  });
});

describe('Redisson #5698, #1626: the watchdog', () => {
  it('stops when the hold ends: a hash of the same owner planted after the release lapses', async () => {
    const { server, admin } = await privateServer();
    // Renewals every 100 ms: a watchdog that kept going would renew the planted hash to 300 ms forever.
    const c = client(server, { watchdogLeaseMs: 300 });
    const h = await c.acquire('peer:wd-stop');
    await h.release();
    await admin.hset('peer:wd-stop', h.owner, 1);
    await admin.pexpire('peer:wd-stop', 1_000);
    await until('the planted hash lapses', async () => (await admin.exists('peer:wd-stop')) === 0);
    assert.equal(h.lost, undefined, 'a released hold is not reported lost');
  });

  it('through a Redis restart (data gone) reports the hold lost on its signal, never silently', async () => {
    const { server, admin } = await privateServer();
    const c = client(server, { watchdogLeaseMs: 1_000 });
    const h = await c.acquire('peer:wd-restart');
    await server.restart();
    await until('the watchdog to report the hold', () =>
      admin.exists('peer:wd-restart').then(
        (n) => n === 1 || h.signal.aborted,
        () => false,
      ),
    );
    // The restarted server has no data: the hold cannot have been renewed, so it must be reported.
    await until('the hold reported lost', async () => h.signal.aborted);
    assert.ok(h.signal.reason instanceof LockLostError);
    assert.equal(await admin.exists('peer:wd-restart'), 0, 'nothing re-created the lost hold');
    await h.release().catch((err: unknown) => assert.ok(err instanceof LockNotHeldError));
  });
});

describe('Redisson #2269, #4574: unlock of a hold you no longer own', () => {
  it('is a typed refusal that changes nothing (never another owner’s hold); a second release is a no-op', async () => {
    const { server, admin } = await privateServer();
    const a = client(server);
    const b = client(server);
    const stale = await a.acquire('peer:not-mine', { leaseMs: 200 });
    await until('the lease lapsed', async () => (await admin.exists('peer:not-mine')) === 0);
    const mine = await b.acquire('peer:not-mine', { leaseMs: 10_000 });
    const err = await stale.release().then(
      () => undefined,
      (e: unknown) => e,
    );
    assert.ok(err instanceof LockNotHeldError && err instanceof LockError, `typed: ${String(err)}`);
    assert.equal(err.code, 'lock_not_held');
    assert.equal(await admin.hget('peer:not-mine', mine.owner), '1', 'the other owner still holds it');
    await stale.release(); // already released: resolves, sends nothing
    await mine.release();
  });
});

describe('node-redlock #168, #169, #282: RedLock withLock whose quorum is lost mid-hold', () => {
  it('aborts its signal and settles (never hangs)', async () => {
    const masters = await Promise.all([0, 1, 2].map(() => privateServer()));
    const conns = masters.map(({ server }) => server.client({ maxRetriesPerRequest: 0 }));
    const lock = closeAfter(new RedLock(conns, { watchdogLeaseMs: 1_000 }));
    let aborted: unknown;
    const done = lock
      .withLock('peer:quorum', { waitMs: 1_000 }, async (h) => {
        // Two of three masters crash while the work runs: the watchdog cannot keep a majority.
        await Promise.all(masters.slice(0, 2).map(({ server }) => server.kill()));
        await new Promise((resolve) => h.signal.addEventListener('abort', resolve, { once: true }));
        aborted = h.signal.reason;
        return 'returned';
      })
      .then(
        (v) => v,
        (err: unknown) => err,
      );
    const outcome = await done;
    assert.ok(aborted instanceof LockLostError, `the signal aborted with LockLostError: ${String(aborted)}`);
    assert.ok(outcome === 'returned' || outcome instanceof LockError, `settled: ${String(outcome)}`);
  });
});

describe('redis-semaphore #9, #24, #205: a refresh racing a release', () => {
  it('never resurrects the hold (50 races of extend() against release())', async () => {
    const { server, admin } = await privateServer();
    const c = client(server);
    for (let i = 0; i < 50; i++) {
      const h = await c.acquire('peer:refresh-race', { leaseMs: 5_000 });
      // Both orders: the refresh sent just before the release, and asked for just after it.
      const released = i % 2 === 0 ? null : h.release();
      const extended = h.extend(60_000);
      const [release] = await Promise.allSettled([released ?? h.release(), extended]);
      assert.equal(release.status, 'fulfilled', 'the release succeeded');
      assert.equal(await admin.exists('peer:refresh-race'), 0, `round ${i}: no hold left`);
    }
  });
});

describe('redis-semaphore #175: an expired hold', () => {
  it('is never silently re-acquired under the old handle: extend() is refused and writes nothing', async () => {
    const { server, admin } = await privateServer();
    const c = client(server);
    const h = await c.acquire('peer:expired', { leaseMs: 200 });
    await until('the lease lapsed', async () => (await admin.exists('peer:expired')) === 0);
    await assert.rejects(h.extend(10_000), LockNotHeldError);
    assert.equal(await admin.exists('peer:expired'), 0, 'the old handle re-created nothing');
    assert.ok(h.lost instanceof LockLostError, 'the handle says the hold was lost');
  });
});
