// The reentrant lock (LockClient): mutual exclusion, re-entry and owners, lease and watchdog, waking or
// handing off to the oldest waiter (barging, starvation mode), Redis down, strictly increasing tokens.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Redis } from 'ioredis';
import { repliesHandled, until } from '../../../harness/async.ts';
import { RedisServer } from '../../../harness/redis-server.ts';
import {
  LockAcquireTimeoutError,
  LockLostError,
  LockNotHeldError,
  LockUnavailableError,
} from '../src/index.ts';
import { lockKeys } from '../src/keys.ts';
import { renewals, useLockServer } from './support/lock.ts';

const { newClient } = useLockServer('the lock tests');

/** Waits until `n` waits are queued on lock `name` (its waiter queue in Redis). */
async function queued(redis: Redis, name: string, n: number): Promise<void> {
  await until(
    `${n} waiter(s) queued on ${name}`,
    async () => (await redis.zcard(lockKeys(name).queue)) === n,
  );
}

describe('mutual exclusion (the seeds’ counter check)', () => {
  for (const n of [10, 200]) {
    it(`${n} clients on their own connections increment a shared counter exactly, never overlapping`, async () => {
      const name = `counter-lock-${n}`;
      const rounds = n === 10 ? 30 : 3;
      const workers = Array.from({ length: n }, () => newClient());
      const { redis } = newClient();
      let inside = 0;
      let overlaps = 0;
      await Promise.all(
        workers.map(async ({ client, redis: r }) => {
          for (let i = 0; i < rounds; i++) {
            await client.withLock(name, { waitMs: 60_000, leaseMs: 10_000 }, async () => {
              inside += 1;
              if (inside > 1) overlaps += 1;
              // Read-modify-write across an await: any overlap loses an increment.
              const v = Number((await r.get(`${name}:count`)) ?? 0);
              await r.set(`${name}:count`, v + 1);
              inside -= 1;
            });
          }
        }),
      );
      assert.equal(overlaps, 0);
      assert.equal(Number(await redis.get(`${name}:count`)), n * rounds);
      assert.equal(await redis.exists(name), 0, 'lock deleted after the last release');
      assert.equal(await redis.zcard(lockKeys(name).queue), 0, 'no waiter left queued');
    });
  }
});

describe('re-entry and owners', () => {
  it('nested withLock in the holder’s chain re-enters and counts holds', async () => {
    const { client, redis } = newClient();
    await client.withLock('reentrant', { leaseMs: 5000 }, async (outer) => {
      assert.equal(outer.holdCount, 1);
      await client.withLock('reentrant', { leaseMs: 5000 }, async (inner) => {
        assert.equal(inner.holdCount, 2);
        assert.equal(await client.holdCount('reentrant'), 2);
      });
      assert.equal(await client.holdCount('reentrant'), 1);
      assert.equal(await redis.exists('reentrant'), 1);
    });
    assert.equal(await redis.exists('reentrant'), 0);
  });

  it('a parallel chain in the same process is a different owner and is excluded', async () => {
    const { client, redis } = newClient();
    const order: string[] = [];
    const opts = { leaseMs: 60_000, waitMs: 60_000 };
    let aInside = () => {};
    const aIn = new Promise<void>((resolve) => {
      aInside = resolve;
    });
    await Promise.all([
      client.withLock('parallel', opts, async () => {
        order.push('a-in');
        aInside();
        // A leaves only once B is queued: B asked while A held, and had to wait.
        await queued(redis, 'parallel', 1);
        order.push('a-out');
      }),
      // Started outside A's chain (a sibling async context), so it is another owner.
      (async () => {
        await aIn;
        await client.withLock('parallel', opts, async () => {
          order.push('b-in');
        });
      })(),
    ]);
    assert.deepEqual(order, ['a-in', 'a-out', 'b-in']);
  });

  it('two clients given the same clientId exclude each other (their ids share only the prefix)', async () => {
    const a = newClient({ clientId: 'same' }).client;
    const b = newClient({ clientId: 'same' }).client;
    assert.notEqual(a.clientId, b.clientId, 'a random part per client');
    assert.ok(a.clientId.startsWith('same-') && b.clientId.startsWith('same-'));
    await a.withLock('same-client-id', { leaseMs: 5000 }, async (held) => {
      assert.ok(held.owner.startsWith(`${a.clientId}:`), 'owner ids are <clientUuid>:<n>');
      // In a's chain: were the ids equal, b would take a's owner for its own and re-enter.
      assert.equal(await b.tryAcquire('same-client-id', { leaseMs: 5000 }), null);
      await assert.rejects(
        b.acquire('same-client-id', { leaseMs: 5000, waitMs: 0 }),
        LockAcquireTimeoutError,
      );
    });
    const after = await b.acquire('same-client-id', { leaseMs: 5000, waitMs: 5000 });
    assert.equal(after.holdCount, 1);
    await after.release();
  });

  it('an explicit owner id hands a lock between clients', async () => {
    const a = newClient().client;
    const b = newClient().client;
    const held = await a.acquire('handover', { leaseMs: 5000, owner: 'job-42' });
    const again = await b.acquire('handover', { leaseMs: 5000, owner: 'job-42', waitMs: 0 });
    assert.equal(again.holdCount, 2);
    await again.release();
    await held.release();
    assert.equal(await a.isLocked('handover'), false);
  });

  it('a non-owner release throws LockNotHeldError and leaves the lock', async () => {
    const { client, redis } = newClient();
    const other = newClient().client;
    const held = await client.acquire('not-mine', { leaseMs: 5000 });
    const fake = await other.tryAcquire('not-mine');
    assert.equal(fake, null);
    await assert.rejects(
      other.releaseHandle(Object.assign(Object.create(held), { owner: 'intruder' })),
      LockNotHeldError,
    );
    assert.equal(await redis.hget('not-mine', held.owner), '1');
    await held.release();
  });
});

describe('lease and watchdog', () => {
  it('a holder that dies (lease 1 s) is replaced by a waiter once its lease lapses', async () => {
    const dead = newClient();
    const gone = await dead.client.acquire('dies', { leaseMs: 1000 });
    dead.redis.disconnect(); // the process is gone: no release, no renewal
    const { client } = newClient();
    const h = await client.acquire('dies', { waitMs: 60_000, leaseMs: 5000 });
    assert.ok(h.token > gone.token);
    await h.release();
  });

  it('the watchdog keeps a live holder’s lock across several leases', async () => {
    // Counted in renewals seen, not in wall time. Renewals come every lease/3: 9 span 3 leases.
    const { client, redis } = newClient({ watchdogLeaseMs: 1000 });
    const other = newClient().client;
    const h = await client.acquire('watched');
    await renewals(redis, 'watched', 9, async () => {
      assert.equal(await other.tryAcquire('watched', { leaseMs: 1000 }), null);
    });
    assert.equal(h.signal.aborted, false);
    await h.release();
    assert.equal(await redis.exists('watched'), 0);
  });

  it('a lock deleted behind the holder’s back aborts its signal at the next renewal', async () => {
    const { client, redis } = newClient({ watchdogLeaseMs: 600 });
    const h = await client.acquire('deleted');
    const lost = new Promise<unknown>((resolve) =>
      h.signal.addEventListener('abort', () => resolve(h.signal.reason)),
    );
    await redis.del('deleted');
    const reason = await lost;
    assert.ok(reason instanceof LockLostError);
    await assert.rejects(h.release(), LockNotHeldError);
  });

  it('an explicit lease lapses: the signal fires and another owner can take it', async () => {
    const { client } = newClient();
    const other = newClient().client;
    const h = await client.acquire('lapses', { leaseMs: 200 });
    await new Promise((resolve) => h.signal.addEventListener('abort', resolve));
    assert.ok(h.signal.reason instanceof LockLostError);
    const h2 = await other.acquire('lapses', { waitMs: 1000, leaseMs: 1000 });
    assert.ok(h2.token > h.token);
    await h2.release();
  });

  it('extend() sets a new lease; extend of a lost lock throws', async () => {
    const { client, redis } = newClient();
    const h = await client.acquire('extend', { leaseMs: 300 });
    await h.extend(5000);
    assert.ok((await redis.pttl('extend')) > 4000);
    assert.ok((await h.remainingTtl()) > 4000);
    await redis.del('extend');
    await assert.rejects(h.extend(), LockNotHeldError);
    assert.equal(await h.remainingTtl(), 0);
  });

  it('release while a renewal is in flight: no lost signal, no error', async () => {
    // Renewals every 50 ms; releases land at every phase of the renewal cycle.
    const { client, redis } = newClient({ watchdogLeaseMs: 150 });
    for (let i = 0; i < 40; i++) {
      const h = await client.acquire('race');
      const signal = h.signal;
      await sleep((i * 7) % 50); // the release lands at another phase of the renewal cycle each time
      await h.release();
      await repliesHandled(redis); // a renewal in flight at the release has been answered and handled
      assert.equal(signal.aborted, false);
    }
    assert.equal(await redis.exists('race'), 0);
  });
});

describe('waiting', () => {
  it('tryAcquire with waitMs returns null once waitMs is out while held elsewhere', async () => {
    const holder = newClient().client;
    const { client } = newClient();
    const h = await holder.acquire('busy', { leaseMs: 600_000 });
    const t0 = Date.now();
    assert.equal(await client.tryAcquire('busy', { waitMs: 300, leaseMs: 1000 }), null);
    // One-sided: a timer never fires early, so it did not give up before its budget.
    assert.ok(Date.now() - t0 >= 299, 'waited out its budget');
    await assert.rejects(client.acquire('busy', { waitMs: 50 }), LockAcquireTimeoutError);
    await h.release();
  });

  it('an aborted wait leaves no subscription, no queue entry and no lock', async () => {
    const holder = newClient().client;
    const { client, redis } = newClient();
    const h = await holder.acquire('aborted', { leaseMs: 10_000 });
    const ac = new AbortController();
    const p = client.acquire('aborted', { signal: ac.signal, leaseMs: 1000 });
    await queued(redis, 'aborted', 1);
    ac.abort(new Error('caller gave up'));
    await assert.rejects(p, /caller gave up/);
    const [, subs] = (await redis.pubsub('NUMSUB', lockKeys('aborted').channel)) as [string, number];
    assert.equal(Number(subs), 0);
    assert.equal(await redis.zcard(lockKeys('aborted').queue), 0);
    await h.release();
    assert.equal(await redis.exists('aborted'), 0, 'nobody was handed the lock');
  });

  /**
   * Five waiters queued in order behind a holder, then released through: `starvationMs` of every client
   * given. Returns the order the waiters got the lock in and the script calls that took.
   */
  async function releaseThrough(
    name: string,
    starvationMs: number,
  ): Promise<{ order: number[]; calls: number }> {
    const holder = newClient({ starvationMs }).client;
    const { redis } = newClient();
    // Leases and waits far beyond the test: nothing here may end by a timer, only by releases.
    const h = await holder.acquire(name, { leaseMs: 600_000 });
    const order: number[] = [];
    const waiters: Promise<void>[] = [];
    for (const i of [0, 1, 2, 3, 4]) {
      const c = newClient({ starvationMs }).client;
      waiters.push(
        (async () => {
          const w = await c.acquire(name, { waitMs: 600_000, leaseMs: 600_000 });
          order.push(i);
          await w.release();
        })(),
      );
      // Waiter i+1 asks only once waiter i is in the queue: the queue order is the start order.
      await queued(redis, name, i + 1);
    }
    await redis.config('RESETSTAT');
    await h.release();
    await Promise.all(waiters);
    const stats = await redis.info('commandstats');
    const calls = (cmd: string) => Number(new RegExp(`cmdstat_${cmd}:calls=(\\d+)`).exec(stats)?.[1] ?? 0);
    return { order, calls: calls('eval') + calls('evalsha') };
  }

  it('starvation mode (a waiter older than starvationMs): each release hands the lock to the oldest waiter', async () => {
    const { order, calls } = await releaseThrough('fifo-starved', 0);
    assert.deepEqual(order, [0, 1, 2, 3, 4]);
    // Six releases (holder + 5 waiters) and nothing else: no waiter had to ask again.
    assert.equal(calls, 6);
  });

  it('normal mode: each release wakes only the oldest waiter, which takes the free lock', async () => {
    const { order, calls } = await releaseThrough('fifo-barging', 600_000);
    assert.deepEqual(order, [0, 1, 2, 3, 4]);
    // Six releases, and one ask per waiter (the woken one's): nobody else was woken.
    assert.equal(calls, 11);
  });

  it('Redis down at acquire gives LockUnavailableError, not a hang', async () => {
    const down = await RedisServer.start();
    const c = newClient({}, down);
    await down.kill();
    await assert.rejects(c.client.acquire('x', { waitMs: 1000, leaseMs: 1000 }), LockUnavailableError);
    await down.stop();
  });
});

describe('fencing tokens', () => {
  it('strictly increase across every acquire form and hand-off, and survive force-unlock', async () => {
    const { client: a, redis } = newClient();
    const b = newClient().client;
    const tokens: number[] = [];
    const h1 = await a.acquire('fenced', { leaseMs: 5000 });
    tokens.push(h1.token);
    const handed = b.acquire('fenced', { waitMs: 60_000, leaseMs: 5000 });
    await queued(redis, 'fenced', 1);
    await h1.release();

    const h2 = await handed;
    tokens.push(h2.token);
    await h2.release();
    const h3 = await a.tryAcquire('fenced', { leaseMs: 5000 });
    assert.ok(h3);
    tokens.push(h3.token);
    assert.equal(await a.forceUnlock('fenced'), true);
    await b.withLock('fenced', { leaseMs: 5000 }, async (h) => {
      tokens.push(h.token);
    });
    // runGuarded: the queued command runs right after the pipelined acquire and sees its token.
    const [guardedToken] = await a.runGuarded('fenced', { leaseMs: 5000 }, (p) => {
      p.get(lockKeys('fenced').token);
    });
    tokens.push(Number(guardedToken));
    const h5 = await a.acquire('fenced', { leaseMs: 5000 });
    tokens.push(h5.token);
    await h5.release();
    assert.deepEqual(
      tokens,
      [...tokens].sort((x, y) => x - y),
      tokens.join(','),
    );
    assert.equal(new Set(tokens).size, tokens.length, 'no token repeats');
  });
});
