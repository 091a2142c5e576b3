// Read-write lock: readers share, a writer excludes, re-entry, downgrade, upgrade refused at once,
// per-hold leases (a dead reader stops blocking after its own lease), no writer starvation.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { until } from '../../../harness/async.ts';
import { type LockClientOptions, type LockHandle, LockUpgradeError, ReadWriteLock } from '../src/index.ts';
import { rwKeys } from '../src/keys.ts';
import { useLockServer } from './support/lock.ts';

const locks = useLockServer('the read-write lock tests');
function newRw(options: LockClientOptions = {}) {
  const c = locks.newClient(options);
  return { rw: new ReadWriteLock(c.client), client: c.client, redis: c.redis };
}

/** Waits until at least `n` waiters are queued on read-write lock `name`. */
async function queued(name: string, n: number): Promise<void> {
  await until(
    `${n} waiter(s) queued on ${name}`,
    async () => (await locks.admin.zcard(rwKeys(name).queue)) >= n,
  );
}

describe('sharing and exclusion', () => {
  it('readers share; a writer waits for them; readers and writers of others wait for the writer', async () => {
    const name = 'rw-basic';
    const [a, b, c, d] = [newRw(), newRw(), newRw(), newRw()];
    const r1 = await a.rw.read.acquire(name, { leaseMs: 5000 });
    const r2 = await b.rw.read.tryAcquire(name, { leaseMs: 5000 });
    assert.ok(r2, 'a second reader shares the lock');
    assert.equal(await a.rw.mode(name), 'read');
    assert.equal(await c.rw.write.tryAcquire(name, { leaseMs: 5000 }), null);
    const events: string[] = [];
    const writer = c.rw.write.acquire(name, { waitMs: 60_000, leaseMs: 5000 }).then((h) => {
      events.push('writer');
      return h;
    });
    await queued(name, 1);
    await r1.release();
    // Redis says who holds it: still r2's read lock, so the queued writer cannot have it.
    assert.equal(await a.rw.mode(name), 'read');
    assert.deepEqual(
      (await locks.admin.hkeys(name)).filter((f) => /^[rw]:/.test(f)),
      [`r:${r2.owner}`],
      'only r2 holds',
    );
    assert.deepEqual(events, [], 'the writer waits for every reader');
    await r2.release();
    const w = await writer;
    assert.equal(await a.rw.mode(name), 'write');
    assert.equal(await d.rw.read.tryAcquire(name, { leaseMs: 5000 }), null, 'readers excluded');
    assert.equal(await d.rw.write.tryAcquire(name, { leaseMs: 5000 }), null, 'writers excluded');
    const reader = d.rw.read.acquire(name, { waitMs: 60_000, leaseMs: 5000 });
    await queued(name, 1);
    await w.release();
    const r3 = await reader;
    assert.ok(r3.token > w.token && w.token > r1.token, 'fencing tokens increase');
    await r3.release();
    assert.equal(await a.redis.exists(name), 0);
    assert.equal(await a.redis.exists(rwKeys(name).holds), 0);
  });

  it('both sides re-enter; holds count down to the last release', async () => {
    const name = 'rw-reenter';
    const { rw, redis } = newRw();
    const other = newRw();
    await rw.write.withLock(name, { leaseMs: 5000 }, async (outer) => {
      await rw.write.withLock(name, { leaseMs: 5000 }, async (inner) => {
        assert.equal(inner.holdCount, 2);
        assert.equal(await rw.write.holdCount(name), 2);
      });
      assert.equal(outer.holdCount, 1);
      assert.equal(await other.rw.read.tryAcquire(name), null);
    });
    await rw.read.withLock(name, { leaseMs: 5000 }, async () => {
      await rw.read.withLock(name, { leaseMs: 5000 }, async (inner) => {
        assert.equal(inner.holdCount, 2);
      });
      assert.equal(await rw.read.holdCount(name), 1);
    });
    assert.equal(await redis.exists(name), 0);
  });
});

describe('downgrade and upgrade', () => {
  it('a writer takes the read lock, releases the write lock, and keeps reading while writers stay out', async () => {
    const name = 'rw-downgrade';
    const { rw } = newRw();
    const otherReader = newRw();
    const otherWriter = newRw();
    await rw.write.withLock(name, { leaseMs: 5000 }, async (w) => {
      const queuedReader = otherReader.rw.read.acquire(name, { waitMs: 5000, leaseMs: 5000 });
      await queued(name, 1);
      const r = await rw.read.acquire(name, { leaseMs: 5000 }); // same chain: same owner
      assert.equal(r.holdCount, 1);
      await w.release(); // the downgrade
      assert.equal(await rw.mode(name), 'read');
      const joined = await queuedReader; // the reader queued behind the writer joins us
      assert.equal(await otherWriter.rw.write.tryAcquire(name, { leaseMs: 1000 }), null);
      await joined.release();
      await r.release();
    });
    const w2 = await otherWriter.rw.write.tryAcquire(name, { leaseMs: 1000 });
    assert.ok(w2, 'free again after the downgraded read hold ends');
    await w2.release();
  });

  it('a reader asking for the write lock gets LockUpgradeError at once, in every form', async () => {
    const name = 'rw-upgrade';
    const a = newRw();
    const b = newRw();
    // Two readers that would both upgrade: with waiting, each would wait for the other forever (the
    // test would hang), so a refusal proves it was refused at once.
    let readers = 0;
    await Promise.all(
      [a, b].map(({ rw }) =>
        rw.read.withLock(name, { leaseMs: 60_000 }, async () => {
          readers += 1;
          await until('both readers hold the lock', () => readers === 2);
          await assert.rejects(rw.write.acquire(name, { leaseMs: 5000 }), LockUpgradeError);
          await assert.rejects(rw.write.tryAcquire(name, { leaseMs: 5000 }), LockUpgradeError);
          await assert.rejects(
            rw.write.withLock(name, { waitMs: 5000 }, () => {}),
            (err: unknown) => err instanceof LockUpgradeError && err.code === 'lock_upgrade',
          );
        }),
      ),
    );
    assert.equal(await a.redis.exists(name), 0);
    assert.equal(await a.redis.zcard(rwKeys(name).queue), 0, 'the refused upgrade left nothing queued');
  });
});

describe('leases', () => {
  it('each read hold lapses on its own lease while another reader keeps the lock alive', async () => {
    const name = 'rw-own-lease';
    const a = newRw();
    const b = newRw({ watchdogLeaseMs: 5000 });
    const { redis } = a;
    const short = await a.rw.read.acquire(name, { leaseMs: 300 });
    const long = await b.rw.read.acquire(name); // watchdog-renewed
    await until('the short hold lapsed', async () => (await short.remainingTtl()) === 0);
    assert.ok((await long.remainingTtl()) > 0, 'the renewed hold is still there');
    await until('the short hold is known lost', () => short.lost);
    assert.equal(long.signal.aborted, false);
    const writer = newRw();
    assert.equal(await writer.rw.write.tryAcquire(name, { leaseMs: 1000 }), null, 'the live reader blocks');
    const fields = await redis.hkeys(name);
    assert.ok(!fields.includes(`r:${short.owner}`), 'the lapsed hold is gone from the lock');
    await long.release();
    const w = await writer.rw.write.tryAcquire(name, { leaseMs: 1000 });
    assert.ok(w, 'writer gets the lock once the live reader left');
    await w.release();
  });

  it('readers of a crashed process stop blocking a waiting writer after their lease', async () => {
    const name = 'rw-crashed-readers';
    const crashed = newRw();
    const live = newRw({ watchdogLeaseMs: 5000 });
    const t0 = Date.now();
    await crashed.rw.read.acquire(name, { leaseMs: 800 });
    await crashed.rw.read.acquire(name, { leaseMs: 800, owner: 'crashed-2' });
    crashed.redis.disconnect();
    const liveHold = await live.rw.read.acquire(name); // renewed by the watchdog all along
    const writer = newRw();
    const got = writer.rw.write.acquire(name, { waitMs: 60_000, leaseMs: 5000 });
    await queued(name, 1);
    await liveHold.release();
    const w = await got;
    // One-sided: the crashed holds were honoured for their lease (they were taken after t0).
    assert.ok(
      Date.now() - t0 >= 800 - 5,
      `writer got the lock ${Date.now() - t0} ms after the crashed reads`,
    );
    await w.release();
  });
});

describe('no writer starvation', () => {
  it('a stream of new readers cannot keep a waiting writer out: they queue behind it', async () => {
    const name = 'rw-starve';
    const first = newRw();
    const r0 = await first.rw.read.acquire(name, { leaseMs: 5000 });
    const writer = newRw();
    const events: string[] = [];
    let writerHeld = false;
    let overlap = 0;
    const wGot = writer.rw.write.acquire(name, { waitMs: 60_000, leaseMs: 5000 });
    await queued(name, 1);
    // Readers arrive every 20 ms, each holding 100 ms: with readers allowed to join, the read lock
    // would never be free for the writer.
    const stream: Promise<void>[] = [];
    let streaming = true;
    const streamer = (async () => {
      for (let i = 0; streaming; i++) {
        const { rw } = newRw();
        stream.push(
          rw.read.withLock(name, { waitMs: 60_000, leaseMs: 5000 }, async () => {
            if (writerHeld) overlap += 1;
            events.push(`r${i}`);
            await sleep(100); // each reader's hold: the overlapping stream is the thing under test
          }),
        );
        await sleep(20); // the readers' arrival pace (the load), not a wait
      }
    })();
    // Four new readers queued behind the writer before the old reader leaves.
    await queued(name, 5);
    await r0.release();
    const w: LockHandle = await wGot;
    writerHeld = true;
    events.push('writer');
    await sleep(50); // the writer's hold: a reader let in meanwhile would count as an overlap
    writerHeld = false;
    await w.release();
    streaming = false;
    await streamer;
    await Promise.all(stream);
    assert.equal(events[0], 'writer', `readers that came after the writer went first: ${events.join(',')}`);
    assert.ok(events.length >= 5, `readers kept coming: ${events.length}`);
    assert.equal(overlap, 0);
  });

  it('readers queued together behind a writer are granted together when it leaves', async () => {
    const name = 'rw-batch';
    const w = newRw();
    const h = await w.rw.write.acquire(name, { leaseMs: 5000 });
    const readers = await Promise.all([newRw(), newRw(), newRw()]);
    const inside: number[] = [];
    let concurrent = 0;
    // Each reader stays inside until all three are: granted one by one, they would never all be.
    const done = readers.map(({ rw }, i) =>
      rw.read.withLock(name, { waitMs: 60_000, leaseMs: 60_000 }, async () => {
        concurrent += 1;
        inside.push(concurrent);
        await until('all three readers inside', () => inside.length === 3, { timeoutMs: 10_000 });
        concurrent -= 1;
        return i;
      }),
    );
    await queued(name, 3);
    await h.release();

    await Promise.all(done);
    assert.equal(Math.max(...inside), 3, 'all three readers held the lock at once');
  });
});
