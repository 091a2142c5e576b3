// Fair lock: FIFO in first-ask order, no barging (tryAcquire included), hand-off to exactly the next
// waiter, dead waiters dropped at their own deadline, live waiters keeping their place across asks.
import assert from 'node:assert/strict';
import { availableParallelism } from 'node:os';
import { describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Redis } from 'ioredis';
import { track, until, untilRedisPasses } from '../../../harness/async.ts';
import {
  FairLock,
  type LockClient,
  type LockClientOptions,
  LockUnavailableError,
  withOwner,
} from '../src/index.ts';
import { fairKeys, lockKeys } from '../src/keys.ts';
import { renewals, useLockServer } from './support/lock.ts';

const locks = useLockServer('the fair lock tests');
function newFair(options: LockClientOptions = {}, fairOptions = {}) {
  const c = locks.newClient(options);
  return { fair: new FairLock(c.client, fairOptions), client: c.client, redis: c.redis };
}

/** Waits until `n` waiters are queued on fair lock `name`. */
async function queued(fair: FairLock, name: string, n: number): Promise<void> {
  await until(`${n} waiter(s) queued on ${name}`, async () => (await fair.queueLength(name)) === n);
}

/** A waiter whose only way to the lock is a hand-off: its heartbeat is longer than its wait. */
const handOffOnly = { heartbeatMs: 300_000, eligibleCapMs: 600_000 };

/** A waiter whose process is gone: its connections drop while it waits, nothing is withdrawn. */
async function kill(w: { client: LockClient; redis: Redis }, pending: Promise<unknown>): Promise<void> {
  w.redis.disconnect();
  await w.client.close();
  await assert.rejects(pending, LockUnavailableError);
}

describe('order', () => {
  it('8 waiters started one after another acquire in exactly that order; a newcomer never barges', async () => {
    const name = 'fair-eight';
    const holder = newFair();
    const { redis } = holder;
    const h = await holder.fair.acquire(name, { leaseMs: 600_000 });
    const order: number[] = [];
    const tokens: number[] = [];
    let polling = true;
    const waiters: Promise<void>[] = [];
    for (let i = 0; i < 8; i++) {
      const { fair } = newFair();
      waiters.push(
        (async () => {
          const w = await fair.acquire(name, { waitMs: 120_000, leaseMs: 60_000 });
          order.push(i);
          tokens.push(w.token);
          // Once the last waiter holds the lock nobody is queued: a newcomer may then take it fairly.
          if (order.length === 8) polling = false;
          await sleep(15); // a brief hold, so the newcomer's tries land while the lock changes hands
          await w.release();
        })(),
      );
      // Waiter i+1 asks only once waiter i is queued.
      await queued(holder.fair, name, i + 1);
    }
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
        await sleep(2); // the newcomer's pace of tries (the load), not a wait
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
          await sleep(Math.random() * 3); // jitter between rounds: varied interleavings are the test
        }
      }),
    );
    // MONITOR streams commands in execution order: once it shows a marker sent after the last
    // acquire's reply, it has shown every acquire.
    const marker = `fair-heads-done-${n}`;
    let markerSeen = false;
    monitor.on('monitor', (_time: string, args: string[]) => {
      if (args[1] === marker) markerSeen = true;
    });
    await redis.echo(marker);
    await until('MONITOR showed every acquire', () => markerSeen);
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
    const h = await holder.fair.acquire(name, { leaseMs: 600_000 });
    const a = newFair();
    const aGot = a.fair.acquire(name, { waitMs: 60_000, leaseMs: 600_000 });
    await queued(holder.fair, name, 1);
    const k = newFair();
    const kAskedAt = Date.now();
    const kWait = k.fair.acquire(name, { waitMs: 1500, leaseMs: 600_000 });
    await queued(holder.fair, name, 2);
    // B asks again only at its heartbeat, and stays eligible far longer than its wait: K's grant
    // lapsing (K's deadline) and the hand-off that follows are its only way in. A wait of 10 s is
    // far below the 15 s a dead waiter would keep its place without its own deadline.
    const b = newFair({}, handOffOnly);
    const bGot = b.fair.acquire(name, { waitMs: 10_000, leaseMs: 600_000 });
    await queued(holder.fair, name, 3);
    await kill(k, kWait);
    await h.release();
    const ah = await aGot;
    // K is now the head of the queue and, unless this machine is slow, still within its deadline: it
    // is granted the lock, and nobody hears from it again. B gets the lock when that grant lapses.
    await ah.release();
    const handle = await bGot;
    // One-sided (timers never fire early): the grant to K was honoured until K's deadline.
    assert.ok(Date.now() >= kAskedAt + 1500 - 50, 'B did not get in before K’s deadline');
    await handle.release();
  });

  it('a dead waiter past its deadline is skipped at once; nobody else’s deadline moves', async () => {
    const name = 'fair-purged';
    const holder = newFair();
    const h = await holder.fair.acquire(name, { leaseMs: 600_000 });
    const k = newFair();
    const kWait = k.fair.acquire(name, { waitMs: 300, leaseMs: 600_000 });
    await queued(holder.fair, name, 1);
    const [kOwner] = await locks.admin.zrange(fairKeys(name).queue, 0, 0);
    const kDeadline = Number(await locks.admin.zscore(fairKeys(name).deadlines, kOwner as string));
    // B asks only at its heartbeat (longer than its wait): only a hand-off at the release gets it
    // in, so the release must skip dead K at once.
    const b = newFair({}, handOffOnly);
    const bGot = b.fair.acquire(name, { waitMs: 60_000, leaseMs: 600_000 });
    await queued(holder.fair, name, 2);
    await kill(k, kWait);
    await untilRedisPasses(locks.admin, kDeadline, "K's deadline on Redis' clock"); // K stays dead
    await h.release();
    const bh = await bGot;
    await bh.release();
    assert.equal(await holder.fair.queueLength(name), 0);
  });

  it('a live waiter that keeps waiting far past its per-ask deadline never loses its place', async () => {
    const name = 'fair-live';
    // Per-ask deadlines of 600 ms, renewed every 100 ms: a pause of 500 ms would still not drop it.
    const opts = { heartbeatMs: 100, eligibleCapMs: 600 };
    const holder = newFair({}, opts);
    const { redis } = holder;
    const h = await holder.fair.acquire(name, { leaseMs: 600_000 });
    const order: string[] = [];
    const early = newFair({}, opts);
    const earlyGot = early.fair.acquire(name, { waitMs: 60_000, leaseMs: 5000 }).then(async (w) => {
      order.push('early');
      await w.release();
    });
    await queued(holder.fair, name, 1);
    const owner = (await redis.zrange(fairKeys(name).queue, 0, 0))[0] as string;
    const ticket = await redis.zscore(fairKeys(name).queue, owner);
    const deadline = async () => Number(await redis.zscore(fairKeys(name).deadlines, owner));
    // Past the deadline of its first ask, on Redis' clock: it stays queued only by asking again.
    await untilRedisPasses(redis, await deadline(), 'the first per-ask deadline');
    const late = newFair({}, opts);
    const lateGot = late.fair.acquire(name, { waitMs: 60_000, leaseMs: 5000 }).then(async (w) => {
      order.push('late');
      await w.release();
    });
    await queued(holder.fair, name, 2);
    await untilRedisPasses(redis, await deadline(), 'a later per-ask deadline');
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
    const head = newFair();
    const headGot = track(head.fair.acquire(name, { waitMs: 60_000, leaseMs: 5000 }));
    await queued(head.fair, name, 1);
    const second = newFair();
    const secondGot = second.fair.acquire(name, { waitMs: 60_000, leaseMs: 5000 });
    const newcomer = newFair().fair;
    let barged = 0;
    // The newcomer keeps trying through the gap between the lapse and the head's take-over.
    while (!headGot.settled()) {
      const got = await newcomer.tryAcquire(name, { leaseMs: 1000 });
      if (got) {
        barged += 1;
        await got.release();
      }
      await sleep(1); // the newcomer's pace of tries through the gap (the load), not a wait
    }
    const hh = await headGot.promise;
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
    assert.equal(await b.fair.tryAcquire(name, { leaseMs: 5000 }), null);
    assert.equal(await a.fair.queueLength(name), 0);
    await h.release();
    assert.equal(await a.redis.exists(name), 0);
  });

  it('with a waiter queued on a free lock it returns null and passes the lock to the waiter', async () => {
    const name = 'fair-try-queued';
    const holder = newFair();
    const { redis } = holder;
    await holder.fair.acquire(name, { leaseMs: 600_000 });
    // The waiter's heartbeat is longer than its wait: a hand-off is its only way in.
    const waiter = newFair({}, handOffOnly);
    const got = waiter.fair.acquire(name, { waitMs: 60_000, leaseMs: 5000 });
    await queued(holder.fair, name, 1);
    // The holder's lock vanishes without a release (deleted as if its lease lapsed): no release runs.
    await redis.del(name);
    assert.equal(await newFair().fair.tryAcquire(name, { leaseMs: 5000 }), null);
    const wh = await got;
    await wh.release();
  });

  it('the holder re-enters at once even with waiters queued; the lock passes on at the last release', async () => {
    const name = 'fair-reenter';
    const a = newFair();
    const b = newFair();
    let bGot = false;
    let bDone: Promise<void> = Promise.resolve();
    await a.fair.withLock(name, { leaseMs: 600_000 }, async (outer) => {
      bDone = b.fair.acquire(name, { waitMs: 60_000, leaseMs: 5000 }).then(async (h) => {
        bGot = true;
        await h.release();
      });
      await queued(a.fair, name, 1);
      const inner = await a.fair.tryAcquire(name, { leaseMs: 600_000 });
      assert.ok(inner, 're-entry succeeds at once');
      assert.equal(inner.holdCount, 2);
      assert.ok(inner.token > outer.token, 're-entry gets a newer token');
      await inner.release();
      // Redis says who holds it: still A, once (B can only be in after A's entry is gone).
      assert.deepEqual(
        await locks.admin.hgetall(name),
        { [outer.owner]: '1' },
        'still held after the inner release',
      );
      assert.equal(bGot, false);
    });
    await bDone;
    assert.ok(bGot, 'B got the lock after the outer release');
  });

  it('an aborted wait leaves no queue entry; fencing tokens are shared with the reentrant lock', async () => {
    const name = 'fair-abort';
    const { fair, client, redis } = newFair();
    const other = newFair();
    const h = await client.acquire(name, { leaseMs: 5000 }); // the plain reentrant lock, same name
    const ac = new AbortController();
    const p = other.fair.acquire(name, { leaseMs: 1000, signal: ac.signal });
    await queued(fair, name, 1);
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
    const { fair, redis } = newFair({ watchdogLeaseMs: 1000 });
    const h = await fair.acquire(name);
    await renewals(redis, name, 6); // every lease/3: two leases
    assert.equal(h.signal.aborted, false);

    assert.ok((await redis.pttl(name)) > 0, 'lease renewed');
    assert.ok((await h.remainingTtl()) > 0, 'remaining ttl > 0');
    await h.release();
    assert.equal(await redis.exists(name), 0);
  });
});
