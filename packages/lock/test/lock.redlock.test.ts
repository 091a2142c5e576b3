// Multi-master lock (RedLock) over 3 and 5 private redis-server processes: majority decisions, rollback
// of refused rounds, dead and restarted masters, validity, extend with quorum, and the seeds' counter.
import assert from 'node:assert/strict';
import { performance } from 'node:perf_hooks';
import { after, before, describe, it } from 'node:test';
import type { Redis } from 'ioredis';
import { until } from '../../../harness/async.ts';
import { RedisServer } from '../../../harness/redis-server.ts';
import {
  LockAcquireTimeoutError,
  LockClient,
  type LockHandle,
  LockNotHeldError,
  LockQuorumUnavailableError,
  RedLock,
  type RedLockOptions,
} from '../src/index.ts';
import { lockKeys, redlockKeys } from '../src/keys.ts';
import { renewals, unhandledRejections } from './support/lock.ts';

let servers: RedisServer[] = [];
let admins: Redis[] = [];
const closers: Array<{ close(): Promise<void> }> = [];

before(async () => {
  servers = await Promise.all(Array.from({ length: 5 }, () => RedisServer.start()));
  admins = servers.map((s) => s.client());
});
after(async () => {
  await Promise.all(closers.map((c) => c.close()));
  await Promise.all(servers.map((s) => s.stop()));
  assert.deepEqual(unhandledRejections(), [], 'no unhandled rejection during the RedLock tests');
});

/** A RedLock over the first n masters, on connections of its own. */
function redlock(n: number, options: RedLockOptions = {}): { lock: RedLock; conns: Redis[] } {
  const conns = servers.slice(0, n).map((s) => s.client());
  const lock = new RedLock(conns, options);
  closers.push(lock);
  return { lock, conns };
}

/** Another owner holding `name` on master i (a plain lock client, as a foreign holder would). */
async function holdElsewhere(i: number, name: string): Promise<LockHandle> {
  const client = new LockClient((servers[i] as RedisServer).client());
  closers.push(client);
  return client.acquire(name, { leaseMs: 30_000 });
}

async function held(i: number, name: string, owner: string): Promise<boolean> {
  return (await (admins[i] as Redis).hexists(name, owner)) === 1;
}

/** Restarts the given masters (if down) and waits until the connections reach them again. */
async function revive(indexes: number[], conns: Redis[] = []): Promise<void> {
  for (const i of indexes) await (servers[i] as RedisServer).restart();
  for (const c of [...conns, ...indexes.map((i) => admins[i] as Redis)]) {
    await until(
      'a connection to a restarted master is back',
      () =>
        c.ping().then(
          () => true,
          () => false,
        ),
      { everyMs: 50 },
    );
  }
}

describe('three masters', () => {
  it('1 of 3 held elsewhere: acquired on the other two, with validity lease − elapsed − drift', async () => {
    const name = 'rl-one-held';
    const foreign = await holdElsewhere(0, name);
    const { lock } = redlock(3);
    const t0 = performance.now();
    const h = await lock.tryAcquire(name, { leaseMs: 10_000 });
    const elapsed = performance.now() - t0;
    assert.ok(h, 'acquired with a majority');
    const drift = 10_000 * 0.01 + 2;
    assert.ok(h.validForMs <= 10_000 - drift, `validity ${h.validForMs}`);
    assert.ok(h.validForMs >= 10_000 - drift - elapsed - 20, `validity ${h.validForMs}`);
    assert.deepEqual(await Promise.all([0, 1, 2].map((i) => held(i, name, h.owner))), [false, true, true]);
    await h.release();
    await h.release(); // idempotent
    assert.deepEqual(await Promise.all([0, 1, 2].map((i) => held(i, name, h.owner))), [false, false, false]);
    assert.equal(await (admins[0] as Redis).hexists(name, foreign.owner), 1, 'the foreign hold is untouched');
    await foreign.release();
  });

  it('2 of 3 held elsewhere: refused as held (not unavailable), and no key of ours is left anywhere', async () => {
    const name = 'rl-two-held';
    const foreign = await Promise.all([holdElsewhere(0, name), holdElsewhere(1, name)]);
    const keysBefore = await Promise.all([0, 1, 2].map((i) => (admins[i] as Redis).keys('*')));
    const { lock } = redlock(3);
    assert.equal(await lock.tryAcquire(name, { leaseMs: 10_000, owner: 'ours' }), null);
    await assert.rejects(
      lock.acquire(name, { waitMs: 300, leaseMs: 10_000, owner: 'ours' }),
      (err: unknown) => err instanceof LockAcquireTimeoutError && err.code === 'lock_timeout',
    );
    for (const i of [0, 1, 2]) {
      const admin = admins[i] as Redis;
      assert.equal(await admin.hexists(name, 'ours'), 0, `hold of ours on master ${i}`);
      const extra = (await admin.keys('*'))
        .filter((k) => !(keysBefore[i] as string[]).includes(k))
        .filter((k) => k !== lockKeys(name).token); // the name's fencing counter, not ours
      assert.deepEqual(extra, [], `keys left on master ${i}`);
    }
    assert.deepEqual(await (admins[2] as Redis).exists(name), 0, 'the master we won was rolled back');
    await Promise.all(foreign.map((f) => f.release()));
  });

  it('waits for a holder’s release (pub/sub on every master), not for its lease', async () => {
    const name = 'rl-wait';
    const a = redlock(3).lock;
    // Neither the holder's lease nor the waiter's heartbeat ends within the waiter's wait: only the
    // release's wake-up can get it the lock before its wait runs out.
    const b = redlock(3, { heartbeatMs: 300_000 }).lock;
    const h = await a.acquire(name, { leaseMs: 600_000 });
    const got = b.acquire(name, { waitMs: 60_000, leaseMs: 10_000 });
    await until('the waiter queued on every master', async () => {
      const lengths = await Promise.all(admins.slice(0, 3).map((r) => r.zcard(redlockKeys(name).queue)));
      return lengths.every((n) => n === 1);
    });
    await h.release();
    const h2 = await got;
    assert.ok(h2.token > h.token, 'fencing token increases');
    await h2.release();
  });

  it('one master killed: still works; restarted: later acquires use it again', async () => {
    const name = 'rl-one-down';
    const { lock, conns } = redlock(3);
    await (servers[2] as RedisServer).kill();
    try {
      const h = await lock.acquire(name, { waitMs: 2000, leaseMs: 10_000 });
      assert.ok(h.validForMs > 9000, `validity ${h.validForMs}`);
      assert.deepEqual(await Promise.all([0, 1].map((i) => held(i, name, h.owner))), [true, true]);
      await h.extend(10_000); // a majority is still there
      await h.release();
    } finally {
      await revive([2], conns);
    }
    const h = await lock.acquire(name, { waitMs: 2000, leaseMs: 10_000 });
    // An acquisition answers once a majority granted it; the restarted master's grant may land just
    // after (its first script call there is a NOSCRIPT then an EVAL): it takes part, if a moment later.
    await until('the restarted master to take part again', () => held(2, name, h.owner));
    assert.deepEqual(await Promise.all([0, 1].map((i) => held(i, name, h.owner))), [true, true]);
    await h.release();
  });

  it('two of three killed: LockQuorumUnavailableError within the wait budget', async () => {
    const name = 'rl-two-down';
    const { lock, conns } = redlock(3);
    await Promise.all([1, 2].map((i) => (servers[i] as RedisServer).kill()));
    try {
      await assert.rejects(
        lock.acquire(name, { waitMs: 1000, leaseMs: 10_000 }),
        (err: unknown) =>
          err instanceof LockQuorumUnavailableError &&
          err.code === 'lock_quorum_unavailable' &&
          err.reachable === 1 &&
          err.needed === 2,
      );
      await assert.rejects(lock.tryAcquire(name, { leaseMs: 10_000 }), LockQuorumUnavailableError);
      assert.equal(await (admins[0] as Redis).exists(name), 0, 'the lone master was rolled back');
    } finally {
      await revive([1, 2], conns);
    }
    const h = await lock.acquire(name, { waitMs: 2000, leaseMs: 10_000 });
    await h.release();
  });

  it('extend keeps a majority: fine with one master down, refused with two, lost when the holds are gone', async () => {
    const name = 'rl-extend';
    const { lock, conns } = redlock(3);
    const h = await lock.acquire(name, { leaseMs: 2000 });
    await (servers[2] as RedisServer).kill();
    try {
      await h.extend(5000);
      assert.ok(h.validForMs > 4500, `validity ${h.validForMs}`);
      await (servers[1] as RedisServer).kill();
      await assert.rejects(h.extend(5000), LockQuorumUnavailableError);
      assert.ok(h.validForMs > 0, 'still valid until its known validity ends');
    } finally {
      await revive([1, 2], conns);
    }
    // Restarted masters came back empty: only master 0 still holds the lock, a minority.
    await assert.rejects(h.extend(5000), LockNotHeldError);
    assert.ok(h.signal.aborted, 'the handle knows it is lost');
    await assert.rejects(h.release(), LockNotHeldError);
  });

  it('a majority answering after the lease is gone is refused and rolled back', async () => {
    const name = 'rl-no-validity';
    // Masters may take their time to answer (a busy machine): the verdict must be "no validity", not
    // "too few answered" (the default wait for one master is 50 ms here).
    const { lock } = redlock(3, { masterTimeoutMs: 60_000 });
    // lease 2 ms: drift alone (2.02 ms) eats it.
    await assert.rejects(
      lock.tryAcquire(name, { leaseMs: 2 }),
      (err: unknown) => err instanceof LockQuorumUnavailableError && /no validity/.test(err.message),
    );
    // The refusal does not wait for a master that refused: its rollback may land a moment later.
    await until('rolled back on every master', async () => {
      const left = await Promise.all(admins.slice(0, 3).map((admin) => admin.exists(name)));
      return left.every((n) => n === 0);
    });
  });

  it('the watchdog renews on every master while the lock is held', async () => {
    const name = 'rl-watchdog';
    const { lock } = redlock(3, { watchdogLeaseMs: 1000 });
    const h = await lock.acquire(name);
    // Counted in renewals seen on each master (every lease/3), not in wall time: 6 span two leases.
    await Promise.all(admins.slice(0, 3).map((admin) => renewals(admin, name, 6)));
    assert.equal(h.signal.aborted, false, 'not lost');
    for (const admin of admins.slice(0, 3)) assert.ok((await admin.pttl(name)) > 0, 'renewed');
    assert.ok((await h.remainingTtl()) > 0, 'remaining ttl');
    await h.release();
    for (const admin of admins.slice(0, 3)) assert.equal(await admin.exists(name), 0, 'released');
  });

  it('the seeds’ counter test: 10 clients across the 3 masters count exactly', async () => {
    const name = 'rl-counter';
    const counterKey = 'rl-counter:count';
    const rounds = 20;
    const admin = admins[0] as Redis;
    let inside = 0;
    let overlaps = 0;
    await Promise.all(
      Array.from({ length: 10 }, async () => {
        const { lock } = redlock(3);
        for (let i = 0; i < rounds; i++) {
          await lock.withLock(name, { waitMs: 30_000, leaseMs: 10_000 }, async () => {
            inside += 1;
            if (inside > 1) overlaps += 1;
            const v = Number((await admin.get(counterKey)) ?? 0);
            await admin.set(counterKey, v + 1);
            inside -= 1;
          });
        }
      }),
    );
    assert.equal(overlaps, 0);
    assert.equal(Number(await admin.get(counterKey)), 10 * rounds);
    for (const a of admins.slice(0, 3)) assert.equal(await a.exists(name), 0, 'nothing left held');
  });
});

describe('five masters', () => {
  it('2 of 5 held elsewhere: acquired; 3 of 5: refused', async () => {
    const name = 'rl5-held';
    const { lock } = redlock(5);
    assert.equal(lock.quorum, 3);
    const two = await Promise.all([holdElsewhere(0, name), holdElsewhere(1, name)]);
    const h = await lock.tryAcquire(name, { leaseMs: 10_000 });
    assert.ok(h, '3 of 5 is a majority');
    await h.release();
    const third = await holdElsewhere(2, name);
    assert.equal(await lock.tryAcquire(name, { leaseMs: 10_000 }), null);
    for (const i of [3, 4]) assert.equal(await (admins[i] as Redis).exists(name), 0, `rolled back on ${i}`);
    await Promise.all([...two, third].map((f) => f.release()));
  });

  it('2 of 5 killed: works; 3 of 5 killed: LockQuorumUnavailableError', async () => {
    const name = 'rl5-down';
    const { lock, conns } = redlock(5);
    await Promise.all([3, 4].map((i) => (servers[i] as RedisServer).kill()));
    try {
      const h = await lock.acquire(name, { waitMs: 2000, leaseMs: 10_000 });
      await h.release();
      await (servers[2] as RedisServer).kill();
      await assert.rejects(
        lock.acquire(name, { waitMs: 500, leaseMs: 10_000 }),
        (err: unknown) =>
          err instanceof LockQuorumUnavailableError && err.reachable === 2 && err.needed === 3,
      );
    } finally {
      await revive([2, 3, 4], conns);
    }
  });
});
