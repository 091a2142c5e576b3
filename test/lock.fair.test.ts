// Fair lock: FIFO in first-ask order, no barging (tryAcquire included), hand-off to exactly the next
// waiter, dead waiters dropped at their own deadline, live waiters keeping their place across asks.
import assert from 'node:assert/strict';
import { availableParallelism } from 'node:os';
import { performance } from 'node:perf_hooks';
import { describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Redis } from 'ioredis';
import {
  FairLock,
  fairKeys,
  type LockClient,
  type LockClientOptions,
  LockUnavailableError,
  lockKeys,
  withOwner,
} from '../src/lock/index.ts';
import { useLockServer } from './support/lock.ts';

const locks = useLockServer('the fair lock tests');
function newFair(options: LockClientOptions = {}, fairOptions = {}) {
  const c = locks.newClient(options);
  return { fair: new FairLock(c.client, fairOptions), client: c.client, redis: c.redis };
}

/** A waiter whose process is gone: its connections drop while it waits, nothing is withdrawn. */
async function kill(w: { client: LockClient; redis: Redis }, pending: Promise<unknown>): Promise<void> {
  w.redis.disconnect();
  await w.client.close();
  await assert.rejects(pending, LockUnavailableError);
}

describe('order', () => {
  it('8 waiters started 100 ms apart acquire in exactly that order; a newcomer never barges', async () => {
    const name = 'fair-eight';
    const holder = newFair();
    const { redis } = holder;
    const h = await holder.fair.acquire(name, { leaseMs: 10_000 });
    const order: number[] = [];
    const tokens: number[] = [];
    let polling = true;
    const waiters = Array.from({ length: 8 }, async (_, i) => {
      await sleep(i * 100);
      const { fair } = newFair();
      const w = await fair.acquire(name, { waitMs: 10_000, leaseMs: 5000 });
      order.push(i);
      tokens.push(w.token);
      // Once the last waiter holds the lock nobody is queued: a newcomer may then take it fairly.
      if (order.length === 8) polling = false;
      await sleep(15);
      await w.release();
    });
    await sleep(850);
    assert.equal(await holder.fair.queueLength(name), 8);
    // A newcomer polling with tryAcquire through the whole chain of hand-offs never gets in.
    const newcomer = newFair().fair;
    let barged = 0;
    const poller = (async () => {
      while (polling) {
        const got = await newcomer.tryAcquire(name, { leaseMs: 1000 });
        if (got) {
          barged += 1;
          await got.release();
        }
        await sleep(2);
      }
    })();
    await h.release();
    await Promise.all(waiters);
    await poller;
    assert.deepEqual(order, [0, 1, 2, 3, 4, 5, 6, 7]);
    assert.deepEqual(
      tokens,
      [...tokens].sort((a, b) => a - b),
    );
    assert.equal(barged, 0, 'tryAcquire took the lock while waiters were queued');
    assert.equal(await redis.zcard(fairKeys(name).queue), 0);
    assert.equal(await redis.exists(name), 0);
  });

  it(`${2 * availableParallelism()} waiters (2 x CPU) looping: each is the head of the queue when it acquires`, async () => {
    const name = 'fair-heads';
    const n = 2 * availableParallelism();
    const rounds = 15;
    const { redis } = newFair();
    // MONITOR gives the server's own order of every acquire call: the first ask of each owner.
    const monitor = await redis.monitor();
    const firstAsk = new Map<string, number>();
    let seq = 0;
    monitor.on('monitor', (_time: string, args: string[]) => {
      const cmd = args[0]?.toLowerCase();
      if ((cmd === 'evalsha' || cmd === 'eval') && args[2] === '5' && args[3] === name) {
        const owner = args[9] as string;
        if (!firstAsk.has(owner)) firstAsk.set(owner, seq);
        seq += 1;
      }
    });
    const acquisitions: Array<{ owner: string; token: number; queued: string[] }> = [];
    let inside = 0;
    let overlaps = 0;
    await Promise.all(
      Array.from({ length: n }, async (_, i) => {
        const { fair, redis: r } = newFair();
        for (let k = 0; k < rounds; k++) {
          const owner = `w${i}:r${k}`;
          await fair.withLock(name, { owner, waitMs: 30_000, leaseMs: 10_000 }, async (h) => {
            inside += 1;
            if (inside > 1) overlaps += 1;
            const queued = await r.zrange(fairKeys(name).queue, 0, -1);
            acquisitions.push({ owner, token: h.token, queued });
            inside -= 1;
          });
          await sleep(Math.random() * 3);
        }
      }),
    );
    await sleep(100);
    monitor.disconnect();
    assert.equal(overlaps, 0);
    assert.equal(acquisitions.length, n * rounds);
    const ask = (owner: string) => {
      const at = firstAsk.get(owner);
      assert.notEqual(at, undefined, `no acquire call seen for ${owner}`);
      return at as number;
    };
    for (const a of acquisitions) {
      for (const q of a.queued) {
        assert.ok(ask(q) > ask(a.owner), `${a.owner} acquired while ${q}, who asked first, was still queued`);
      }
    }
    const byToken = [...acquisitions].sort((x, y) => x.token - y.token).map((a) => a.owner);
    const byFirstAsk = [...acquisitions].sort((x, y) => ask(x.owner) - ask(y.owner)).map((a) => a.owner);
    assert.deepEqual(byToken, byFirstAsk, 'acquisitions follow the order of first asks exactly');
  });
});

describe('dead and live waiters', () => {
  it('a killed waiter in the middle of the queue delays the next one by at most its own deadline', async () => {
    const name = 'fair-killed';
    const holder = newFair();
    const h = await holder.fair.acquire(name, { leaseMs: 10_000 });
    const t0 = performance.now();
    const a = newFair();
    const aGot = a.fair.acquire(name, { waitMs: 10_000, leaseMs: 10_000 });
    await sleep(50);
    const k = newFair();
    const kAskedAt = performance.now();
    const kWait = k.fair.acquire(name, { waitMs: 1500, leaseMs: 10_000 });
    await sleep(50);
    const b = newFair();
    const bGot = b.fair.acquire(name, { waitMs: 10_000, leaseMs: 10_000 }).then((handle) => ({
      handle,
      at: performance.now(),
    }));
    await sleep(50);
    assert.equal(await holder.fair.queueLength(name), 3);
    await kill(k, kWait);
    await sleep(200);
    await h.release();
    const ah = await aGot;
    await sleep(100);
    // K is now the head of the queue and still within its deadline: it is granted the lock, and
    // nobody hears from it again. B must get the lock when that grant lapses, at K's deadline.
    await ah.release();
    const { handle, at } = await bGot;
    const kDeadline = kAskedAt + 1500;
    assert.ok(at <= kDeadline + 100 + 150, `B waited ${Math.round(at - kDeadline)} ms past K's deadline`);
    assert.ok(at >= kDeadline - 50, 'the grant to K was honoured until K’s deadline');
    assert.ok(performance.now() - t0 < 3000, 'whole scenario within 3 s');
    await handle.release();
  });

  it('a dead waiter past its deadline is skipped at once; nobody else’s deadline moves', async () => {
    const name = 'fair-purged';
    const holder = newFair();
    const h = await holder.fair.acquire(name, { leaseMs: 10_000 });
    const k = newFair();
    const kWait = k.fair.acquire(name, { waitMs: 300, leaseMs: 10_000 });
    await sleep(20);
    const b = newFair();
    // B's own wait is shorter than K's deadline plus its own: with Redisson's accumulated timeouts B
    // would be dropped; here B's deadline is its own.
    const bGot = b.fair.acquire(name, { waitMs: 1000, leaseMs: 10_000 });
    await sleep(20);
    await kill(k, kWait);
    await sleep(500); // past K's deadline, within B's
    const released = performance.now();
    await h.release();
    const bh = await bGot;
    assert.ok(performance.now() - released < 100, 'B got the lock straight after the release');
    await bh.release();
    assert.equal(await holder.fair.queueLength(name), 0);
  });

  it('a live waiter that keeps waiting far past its per-ask deadline never loses its place', async () => {
    const name = 'fair-live';
    const opts = { heartbeatMs: 100, eligibleCapMs: 300 };
    const holder = newFair({}, opts);
    const { redis } = holder;
    const h = await holder.fair.acquire(name, { leaseMs: 10_000 });
    const order: string[] = [];
    const early = newFair({}, opts);
    const earlyGot = early.fair.acquire(name, { waitMs: 10_000, leaseMs: 5000 }).then(async (w) => {
      order.push('early');
      await w.release();
    });
    await sleep(50);
    const owner = (await redis.zrange(fairKeys(name).queue, 0, 0))[0] as string;
    const ticket = await redis.zscore(fairKeys(name).queue, owner);
    await sleep(600);
    const late = newFair({}, opts);
    const lateGot = late.fair.acquire(name, { waitMs: 10_000, leaseMs: 5000 }).then(async (w) => {
      order.push('late');
      await w.release();
    });
    await sleep(600); // 1.2 s in all: four times the early waiter's per-ask deadline
    assert.equal(await redis.zscore(fairKeys(name).queue, owner), ticket, 'same ticket after many asks');
    assert.ok(Number(await redis.zscore(fairKeys(name).deadlines, owner)) > 0);
    await h.release();
    await Promise.all([earlyGot, lateGot]);
    assert.deepEqual(order, ['early', 'late']);
  });

  it('a holder that dies is replaced by the head within its lease, and a newcomer cannot take the gap', async () => {
    const name = 'fair-holder-dies';
    const dead = newFair();
    await dead.fair.acquire(name, { leaseMs: 500 });
    dead.redis.disconnect();
    const t0 = performance.now();
    const head = newFair();
    const headGot = head.fair.acquire(name, { waitMs: 5000, leaseMs: 5000 });
    await sleep(20);
    const second = newFair();
    const secondGot = second.fair.acquire(name, { waitMs: 5000, leaseMs: 5000 });
    const newcomer = newFair().fair;
    let barged = 0;
    while (performance.now() - t0 < 700) {
      const got = await newcomer.tryAcquire(name, { leaseMs: 1000 });
      if (got) {
        barged += 1;
        await got.release();
      }
      await sleep(1);
    }
    const hh = await headGot;
    assert.ok(performance.now() - t0 < 500 + 300, 'head took over within the dead holder’s lease');
    assert.equal(barged, 0);
    await hh.release();
    await (await secondGot).release();
  });
});

describe('tryAcquire(0) and re-entry', () => {
  it('takes a free lock with nobody queued; returns null at once, leaving nothing queued, when held', async () => {
    const name = 'fair-try';
    const a = newFair();
    const b = newFair();
    const h = await a.fair.tryAcquire(name, { leaseMs: 5000 });
    assert.ok(h, 'free lock, nobody queued: taken');
    const t0 = performance.now();
    assert.equal(await b.fair.tryAcquire(name, { leaseMs: 5000 }), null);
    assert.ok(performance.now() - t0 < 50, 'refused at once');
    assert.equal(await a.fair.queueLength(name), 0);
    await h.release();
    assert.equal(await a.redis.exists(name), 0);
  });

  it('with a waiter queued on a free lock it returns null and passes the lock to the waiter', async () => {
    const name = 'fair-try-queued';
    const holder = newFair();
    const { redis } = holder;
    await holder.fair.acquire(name, { leaseMs: 10_000 });
    const waiter = newFair({}, { heartbeatMs: 2000, eligibleCapMs: 6000 });
    const got = waiter.fair.acquire(name, { waitMs: 5000, leaseMs: 5000 });
    await sleep(50);
    // The holder's lock vanishes without a release (deleted as if its lease lapsed): no release runs,
    // and the waiter's timer is seconds away.
    await redis.del(name);
    const t0 = performance.now();
    assert.equal(await newFair().fair.tryAcquire(name, { leaseMs: 5000 }), null);
    const wh = await got;
    assert.ok(performance.now() - t0 < 100, 'the try handed the free lock to the queued waiter');
    await wh.release();
  });

  it('the holder re-enters at once even with waiters queued; the lock passes on at the last release', async () => {
    const name = 'fair-reenter';
    const a = newFair();
    const b = newFair();
    let bGotAt = 0;
    let innerReleasedAt = 0;
    let bDone: Promise<void> = Promise.resolve();
    await a.fair.withLock(name, { leaseMs: 5000 }, async (outer) => {
      bDone = b.fair.acquire(name, { waitMs: 5000, leaseMs: 5000 }).then(async (h) => {
        bGotAt = performance.now();
        await h.release();
      });
      while ((await a.fair.queueLength(name)) === 0) await sleep(5);
      const inner = await a.fair.tryAcquire(name, { leaseMs: 5000 });
      assert.ok(inner, 're-entry succeeds at once');
      assert.equal(inner.holdCount, 2);
      assert.ok(inner.token > outer.token, 're-entry gets a newer token');
      await inner.release();
      innerReleasedAt = performance.now();
      await sleep(50);
      assert.equal(bGotAt, 0, 'still held after the inner release');
    });
    await bDone;
    assert.ok(bGotAt > innerReleasedAt, 'B got the lock only after the outer release');
  });

  it('an aborted wait leaves no queue entry; fencing tokens are shared with the reentrant lock', async () => {
    const name = 'fair-abort';
    const { fair, client, redis } = newFair();
    const other = newFair();
    const h = await client.acquire(name, { leaseMs: 5000 }); // the plain reentrant lock, same name
    const ac = new AbortController();
    const p = other.fair.acquire(name, { leaseMs: 1000, signal: ac.signal });
    await sleep(50);
    assert.equal(await fair.queueLength(name), 1);
    ac.abort(new Error('gave up'));
    await assert.rejects(p, /gave up/);
    assert.equal(await fair.queueLength(name), 0);
    await h.release();
    const f = await withOwner(client.clientId, 'x', () => fair.acquire(name, { leaseMs: 1000 }));
    assert.ok(f.token > h.token, 'fair token above the reentrant lock’s');
    assert.equal(Number(await redis.get(lockKeys(name).token)), f.token);
    await f.release();
  });

  it('the watchdog keeps a fair hold alive past several leases', async () => {
    const name = 'fair-watchdog';
    const { fair, redis } = newFair({ watchdogLeaseMs: 300 });
    const h = await fair.acquire(name);
    await sleep(1000);
    assert.equal(h.signal.aborted, false);
    assert.ok((await redis.pttl(name)) > 0, 'lease renewed');
    assert.ok((await h.remainingTtl()) > 0, 'remaining ttl > 0');
    await h.release();
    assert.equal(await redis.exists(name), 0);
  });
});
