// Client-level regression tests for the reentrant lock's per-wait ids, hand-off markers and "held by
// one of ours" flag (the script-level side is in lock.scripts.test.ts):
// (a) two waits of one owner never stand for each other: one is handed the lock (count 1), the other
//     re-enters (count 2) or times out, and the lock outlives the first release;
// (b) a wait that times out without being handed the lock gives nothing of its owner's back;
// (c) a lease that is not a positive integer is refused before anything is sent to Redis;
// (d) a lock without a TTL (a foreign holder) is not polled, and its Redisson release wakes us;
// (e) a contended acquisition between two of our clients costs at most 3 commands and never touches
//     the Redisson channel.
// Every test runs against a private redis-server of its own, so server-wide counters (INFO
// commandstats, PUBSUB NUMSUB) see only that test's clients.
import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Command, Redis } from 'ioredis';
import { repliesHandled, track, until } from '../../../harness/async.ts';
import { RedisServer } from '../../../harness/redis-server.ts';
import { numsub } from '../../../test/support/pubsub.ts';
import type { LockEvent } from '../src/client.ts';
import { LockAcquireTimeoutError, LockClient, type LockHandle } from '../src/index.ts';
import { lockKeys } from '../src/keys.ts';
import { RETRY_CAP_MS } from '../src/waiting.ts';
import { unhandledRejections } from './support/lock.ts';
import { assertWokenByUnlock, ForeignRedisson, redissonChannelName } from './support/redisson.ts';

const servers: RedisServer[] = [];
const clients: LockClient[] = [];

after(async () => {
  await Promise.all(clients.map((c) => c.close()));
  await Promise.all(servers.map((s) => s.stop()));
  assert.deepEqual(unhandledRejections(), [], 'no unhandled rejection during the regression tests');
});

async function privateServer(): Promise<{ server: RedisServer; admin: Redis }> {
  const server = await RedisServer.start();
  servers.push(server);
  return { server, admin: server.client() };
}

/** Every command a connection sends, as "name arg arg ...", recorded from `sendCommand`. */
function recordCommands(redis: Redis, log: string[]): void {
  const send = redis.sendCommand.bind(redis);
  redis.sendCommand = ((command: Command, stream?: Parameters<Redis['sendCommand']>[1]) => {
    log.push([command.name, ...command.args.map((a) => String(a))].join(' '));
    return send(command, stream);
  }) as Redis['sendCommand'];
}

interface Ours {
  client: LockClient;
  redis: Redis;
  /** Commands sent on the command connection and on the subscriber connection. */
  log: string[];
  events: LockEvent[];
}

/** A LockClient on a connection of its own, with its own subscriber; both record what they send. */
async function ours(server: RedisServer): Promise<Ours> {
  const redis = server.client();
  const sub = server.client({ lazyConnect: true, autoResubscribe: false });
  await redis.ping(); // connected before recording: the handshake is not the lock's doing
  const log: string[] = [];
  const events: LockEvent[] = [];
  recordCommands(redis, log);
  recordCommands(sub, log);
  const client = new LockClient(redis, { subscriber: sub, onEvent: (e) => events.push(e) });
  clients.push(client);
  return { client, redis, log, events };
}

/** INFO commandstats as {command: calls (+ rejected calls)}. */
async function commandCalls(admin: Redis): Promise<Record<string, number>> {
  const info = await admin.info('commandstats');
  const calls: Record<string, number> = {};
  for (const m of info.matchAll(/^cmdstat_([^:]+):calls=(\d+)(?:.*?rejected_calls=(\d+))?/gm)) {
    calls[m[1] ?? ''] = Number(m[2]) + Number(m[3] ?? 0);
  }
  return calls;
}
const scriptCalls = (c: Record<string, number>) => (c.evalsha ?? 0) + (c.eval ?? 0);

/** A third owner's one-shot try: null while anyone holds the lock. */
async function thirdOwnerKeptOut(client: LockClient, name: string): Promise<void> {
  assert.equal(await client.tryAcquire(name, { leaseMs: 1000, owner: 'third-owner' }), null);
}

/**
 * On a private server, a holder (a client of its own) takes `name` for holderLeaseMs; then wait 1
 * (client c1, waitMs 8000) and wait 2 (client c2, `second`), both of owner "job", queue behind it,
 * each one queued before the next starts. `third` is a fourth client, for a third owner.
 */
async function twoWaitsOfJob(
  name: string,
  holderLeaseMs: number,
  second: { waitMs: number; signal?: AbortSignal },
) {
  const { server, admin } = await privateServer();
  const k = lockKeys(name);
  const holder = await ours(server);
  const c1 = await ours(server);
  const c2 = await ours(server);
  const third = await ours(server);
  const held = await holder.client.acquire(name, { leaseMs: holderLeaseMs });
  const w1 = track(c1.client.acquire(name, { owner: 'job', leaseMs: 10_000, waitMs: 8000 }));
  await until('wait 1 queued', async () => (await admin.zcard(k.queue)) === 1);
  const w2 = track(c2.client.acquire(name, { owner: 'job', leaseMs: 10_000, ...second }));
  await until('wait 2 queued', async () => (await admin.zcard(k.queue)) === 2);
  return { admin, k, held, c1, c2, third, w1, w2 };
}

describe('(a) two waits of one owner', () => {
  it('explicit owner "job" on two clients behind a third: one is handed the lock (count 1), the other re-enters (count 2); the lock outlives the first release', async () => {
    const name = 'reg:same-owner:two-clients';
    const { admin, k, held, c1, c2, third, w1, w2 } = await twoWaitsOfJob(name, 2000, { waitMs: 8000 });
    // A queue entry is the wait, JSON [waitId, clientId, leaseMs, eligibleMs, owner].
    const waits = (await admin.zrange(k.queue, 0, -1)).map((e) => String(JSON.parse(e)[0]));
    assert.equal(new Set(waits).size, 2, `two queue entries, one per wait: ${waits}`);
    assert.ok(waits[0]?.startsWith(`${c1.client.clientId}:`), 'wait ids are per client and per call');
    assert.ok(waits[1]?.startsWith(`${c2.client.clientId}:`));

    await held.release();
    const handles = await Promise.all([w1.promise, w2.promise]);
    const [first, second] = [...handles].sort((x, y) => x.holdCount - y.holdCount) as [
      LockHandle,
      LockHandle,
    ];
    assert.deepEqual(
      handles.map((h) => h.holdCount).sort(),
      [1, 2],
      'exactly one was handed the lock (count 1); the other re-entered (count 2)',
    );
    assert.ok(first.token < second.token, 'the re-entry got a later token');
    assert.equal(await admin.hget(name, 'job'), '2', 'both holds counted');
    assert.deepEqual(Object.keys(await admin.hgetall(name)), ['job']);

    await thirdOwnerKeptOut(third.client, name);
    await first.release();
    assert.equal(await admin.hget(name, 'job'), '1', 'one hold left');
    await thirdOwnerKeptOut(third.client, name);
    assert.equal(await third.client.isLocked(name), true, 'not deleted while the other still holds it');
    await second.release();
    assert.equal(await admin.exists(name, k.ours), 0, 'freed, no marker or flag left');
    const after = await third.client.tryAcquire(name, { leaseMs: 1000, owner: 'third-owner' });
    assert.ok(after, 'free for the third owner now');
    await after.release();
  });

  it('parallel branches sharing an async-chain owner on one client: one handed (count 1), the other re-enters (count 2); never two holders with count 1', async () => {
    const { server, admin } = await privateServer();
    const name = 'reg:same-owner:branches';
    const holder = await ours(server);
    const c = await ours(server);
    const third = await ours(server);

    const held = await holder.client.acquire(name, { leaseMs: 2000 });
    let owner = '';
    const branches = track(
      c.client.withLock('reg:outer', { leaseMs: 10_000 }, async (outer) => {
        owner = outer.owner;
        // Both branches run as the outer lock's owner (no explicit owner).
        return Promise.all([
          c.client.acquire(name, { leaseMs: 10_000, waitMs: 8000 }),
          c.client.acquire(name, { leaseMs: 10_000, waitMs: 8000 }),
        ]);
      }),
    );
    await until('both waits queued', async () => (await admin.zcard(lockKeys(name).queue)) === 2);
    await held.release();
    const handles = await branches.promise;
    assert.ok(
      handles.every((h) => h.owner === owner),
      'one owner',
    );
    assert.deepEqual(handles.map((h) => h.holdCount).sort(), [1, 2]);
    assert.equal(await admin.hget(name, owner), '2');

    await handles[0].release();
    assert.equal(await admin.hget(name, owner), '1');
    await thirdOwnerKeptOut(third.client, name);
    await handles[1].release();
    assert.equal(await admin.exists(name), 0);
  });
});

describe('(b) a wait that was not handed the lock withdraws', () => {
  /**
   * A third client holds `name` with a long lease; wait 1 (client c1) and then wait 2 (client c2),
   * both of owner "job", queue behind it; the holder releases and the lock is handed to wait 1.
   * The long lease keeps wait 2 asleep (its timer is the PTTL, capped at the 5 s heartbeat).
   */
  async function handedToFirstOfTwo(name: string, second: { waitMs: number; signal?: AbortSignal }) {
    const { admin, k, held, c2, third, w1, w2 } = await twoWaitsOfJob(name, 20_000, second);
    await held.release();
    const h1 = await w1.promise;
    assert.equal(h1.holdCount, 1, 'wait 1 was handed the lock');
    assert.equal(await admin.hget(name, 'job'), '1');
    assert.equal(w2.settled(), false, 'wait 2 is still waiting');
    const cancels = () => c2.log.filter((c) => c.startsWith('evalsha') && c.includes(' cancel ')).length;
    return { admin, k, c2, h1, w2: w2.promise, third, cancels };
  }

  it('abort: its cancel (with its own wait id) leaves the owner’s handed hold untouched', async () => {
    const name = 'reg:cancel-same-owner:abort';
    const controller = new AbortController();
    const { admin, k, c2, h1, w2, third, cancels } = await handedToFirstOfTwo(name, {
      waitMs: 8000,
      signal: controller.signal,
    });
    // Wait 2 has had its refusal back and gone to sleep: the abort finds it asleep, not mid-ask.
    await repliesHandled(c2.redis);
    controller.abort(new Error('wait 2 gives up'));
    await assert.rejects(w2, /wait 2 gives up/);
    assert.equal(cancels(), 1, 'it withdrew with a cancel');
    assert.equal(await admin.hget(name, 'job'), '1', 'the cancel did not count down the other wait’s hold');
    assert.equal(await admin.zcard(k.queue), 0, 'and left the queue');
    assert.equal(await admin.exists(k.ours), 1, 'still held by one of ours');
    await thirdOwnerKeptOut(third.client, name);
    assert.ok(h1.validForMs > 0 && !h1.lost);
    await h1.release();
    assert.equal(await admin.exists(name, k.ours), 0, 'freed by wait 1’s own release');
  });

  it('timeout: it either times out (cancel; the other hold untouched) or re-enters at its deadline (count 2); never frees the other’s hold', async (t) => {
    const name = 'reg:cancel-same-owner:timeout';
    const { admin, k, h1, w2, third, cancels } = await handedToFirstOfTwo(name, { waitMs: 1000 });
    // The waiter's timer may fire a hair before its deadline, and then its last attempt finds its
    // owner holding: a re-entry (same owner semantics). Either way the owner's count stays right.
    const outcome = await w2.then(
      (h) => h,
      (err: unknown) => {
        assert.ok(err instanceof LockAcquireTimeoutError, String(err));
        return null;
      },
    );
    t.diagnostic(outcome ? 'wait 2 re-entered at its deadline' : 'wait 2 timed out');
    if (outcome) {
      assert.equal(outcome.holdCount, 2);
      assert.equal(await admin.hget(name, 'job'), '2');
      await outcome.release();
    } else {
      assert.equal(cancels(), 1, 'it withdrew with a cancel');
    }
    assert.equal(await admin.hget(name, 'job'), '1', 'wait 1’s hold is still counted');
    assert.equal(await admin.zcard(k.queue), 0);
    await thirdOwnerKeptOut(third.client, name);
    await h1.release();
    assert.equal(await admin.exists(name, k.ours), 0);
  });
});

describe('(c) a lease that is not a positive integer', () => {
  for (const leaseMs of [1500.5, Number.POSITIVE_INFINITY, Number.NaN, 0, -5]) {
    it(`leaseMs ${leaseMs}: RangeError from every acquire form, nothing sent, no key written`, async () => {
      const { server, admin } = await privateServer();
      const c = await ours(server);
      const name = 'reg:bad-lease';
      await assert.rejects(c.client.tryAcquire(name, { leaseMs }), RangeError);
      await assert.rejects(c.client.tryAcquire(name, { leaseMs, waitMs: 1000 }), RangeError);
      await assert.rejects(c.client.acquire(name, { leaseMs }), RangeError, 'acquire, waiting forever');
      await assert.rejects(
        c.client.withLock(name, { leaseMs }, () => assert.fail('must not run')),
        RangeError,
      );
      await assert.rejects(
        c.client.runGuarded(name, { leaseMs, waitMs: 1000 }, (p) => {
          p.set('reg:guarded', 'ran');
        }),
        RangeError,
      );
      assert.deepEqual(c.log, [], 'not a single command sent (not even the subscriber’s)');
      assert.equal(await admin.dbsize(), 0, 'no key written');
      assert.equal(await numsub(admin, `flashsale_lock__wake:${c.client.clientId}`), 0);
    });
  }

  it('a fractional or infinite watchdog lease is refused by the constructor', async () => {
    const { server } = await privateServer();
    assert.throws(() => new LockClient(server.client(), { watchdogLeaseMs: 1500.5 }), RangeError);
    assert.throws(
      () => new LockClient(server.client(), { watchdogLeaseMs: Number.POSITIVE_INFINITY }),
      RangeError,
    );
  });
});

describe('(d) a lock with no TTL', () => {
  it('is not polled (a few attempts per second at most), and a Redisson-style release ("0") wakes the waiter promptly', async () => {
    const { server, admin } = await privateServer();
    const name = 'reg:no-ttl';
    const java = new ForeignRedisson(server.client(), server.client());
    await admin.hset(name, java.lockName(1), 1); // by hand: no PEXPIRE, PTTL -1
    assert.equal(await admin.pttl(name), -1);
    const c = await ours(server);

    const before = await commandCalls(admin);
    const waiting = track(c.client.acquire(name, { leaseMs: 5000, waitMs: 20_000 }));
    await sleep(1000); // the window is the claim: a poller would send many attempts within it
    const inOneSecond = scriptCalls(await commandCalls(admin)) - scriptCalls(before);
    assert.equal(waiting.settled(), false, 'still waiting');
    assert.ok(inOneSecond >= 1 && inOneSecond <= 4, `${inOneSecond} acquire attempts in 1 s (at most a few)`);
    assert.equal(await numsub(admin, redissonChannelName(name)), 1, 'it listens on the Redisson channel');

    // Redisson's unlock: DEL + PUBLISH "0".
    await assertWokenByUnlock(waiting.promise, () => java.unlock(name, 1, 30_000), admin, name);
  });
});

describe('(e) commands per contended acquisition', () => {
  it('two clients alternating on one lock, 50 rounds (woken to take it, or handed it once starved): at most 3 commands per acquisition, never a SUBSCRIBE to the Redisson channel', async (t) => {
    const { server, admin } = await privateServer();
    const name = 'reg:alternate';
    const k = lockKeys(name);
    const channel = redissonChannelName(name);
    const a = await ours(server);
    const b = await ours(server);
    const leaseMs = 10_000;

    // One contended acquisition: `waiter` queues while `holder` holds, then the release wakes it (it
    // asks again and takes the free lock) or, past the starvation bound, hands it the lock.
    const handOver = async (holder: LockHandle, waiter: Ours): Promise<LockHandle> => {
      const waiting = track(waiter.client.acquire(name, { leaseMs, waitMs: 5000 })).promise;
      await until('the waiter queued', async () => (await admin.zcard(k.queue)) === 1);
      assert.equal(await numsub(admin, channel), 0, 'nobody listens on the Redisson channel');
      await holder.release();
      return waiting;
    };

    // Warm-up (not counted): starts both clients' wake subscriptions and loads the scripts.
    let held = await a.client.acquire(name, { leaseMs });
    held = await handOver(held, b);
    held = await handOver(held, a);
    a.log.length = 0;
    b.log.length = 0;
    a.events.length = 0;
    b.events.length = 0;
    await admin.config('RESETSTAT');

    const rounds = 50;
    const perRound: number[] = [];
    for (let i = 0; i < rounds; i++) {
      const waiter = i % 2 === 0 ? b : a;
      const sent = a.log.length + b.log.length;
      held = await handOver(held, waiter);
      assert.equal(held.holdCount, 1);
      perRound.push(a.log.length + b.log.length - sent);
    }
    const stats = await commandCalls(admin);
    await held.release();

    const log = [...a.log, ...b.log];
    t.diagnostic(`commands per acquisition: ${perRound.join(',')}`);
    assert.ok(
      perRound.every((n) => n <= 3),
      `at most 3 commands per contended acquisition: ${perRound.join(',')}\n${log.join('\n')}`,
    );
    assert.ok(log.length <= 3 * rounds);
    // The release script names the Redisson channel as a key (it publishes there when nobody is queued);
    // what must not happen is a subscription to it.
    assert.deepEqual(
      log.filter((c) => /^(p|s)?(un)?subscribe /i.test(c)),
      [],
      'no SUBSCRIBE / UNSUBSCRIBE at all (the wake channels were subscribed during the warm-up)',
    );
    assert.ok(
      log.every((c) => c.startsWith('evalsha ')),
      'only the acquire and release scripts were sent',
    );
    // Server-side, the same: only scripts ran, no subscription changed.
    assert.ok(scriptCalls(stats) <= 3 * rounds, `script calls ${scriptCalls(stats)}`);
    for (const cmd of ['subscribe', 'unsubscribe', 'psubscribe', 'punsubscribe', 'ssubscribe']) {
      assert.equal(stats[cmd] ?? 0, 0, `${cmd} calls`);
    }
    const acquired = [...a.events, ...b.events].filter((e) => e.type === 'acquired');
    assert.equal(acquired.length, rounds);
    assert.equal(await admin.exists(name, k.queue, k.ours), 0, 'nothing left behind');
  });
});

describe('a holder’s last millisecond (PTTL 0)', () => {
  // A PTTL of 0 means the key expires within this very millisecond. It used to read as "no TTL"
  // (`pttl > 0 ? pttl : Infinity`), so a waiter whose timer landed on that millisecond (most of them:
  // the timer is set to the holder's PTTL) slept the 5 s heartbeat or its whole wait. Only -1 is "no TTL".
  it('a waiter takes over a dead holder’s lapsed lease at once, every time', async () => {
    const { server } = await privateServer();
    const holder = await ours(server);
    const waiter = await ours(server);
    const took: number[] = [];
    for (let i = 0; i < 10; i++) {
      const name = `reg:lapse:${i}`;
      await holder.client.acquire(name, { leaseMs: 100 }); // never released: it lapses
      const t0 = Date.now();
      const h = await waiter.client.acquire(name, { leaseMs: 1000, waitMs: 60_000 });
      took.push(Date.now() - t0);
      await h.release();
    }
    // One-sided: the bug's waiter slept its heartbeat (RETRY_CAP_MS) past the lapse.
    assert.ok(
      took.every((ms) => ms < RETRY_CAP_MS),
      `acquired before the retry heartbeat each time: ${took.join(', ')} ms`,
    );
  });
});

describe('runGuarded: guarded work done by an earlier send whose reply was lost', () => {
  // ioredis re-sends a pipeline whose reply was lost. When the first send ran under the lock and the
  // re-sent acquire finds the lock taken by someone else since, the idempotent guarded script still
  // answers "done"; the call must return that, not wait for the lock and answer busy.
  it('returns the guarded replies when `settled` says done, leaving no queue entry; otherwise waits', async () => {
    const { server, admin } = await privateServer();
    const holder = await ours(server);
    const caller = await ours(server);
    const name = 'reg:settled';
    const k = lockKeys(name);
    const held = await holder.client.acquire(name, { leaseMs: 10_000 });
    await admin.set('work', 'done');
    const replies = await caller.client.runGuarded(
      name,
      { leaseMs: 1000, waitMs: 5000, settled: (r) => r[0] === 'done' },
      (p) => p.get('work'),
    );
    assert.deepEqual(replies, ['done']);
    // Waiting would have ended in LockAcquireTimeoutError: the holder keeps the lock past waitMs.
    assert.equal(await admin.hexists(name, held.owner), 1, 'the holder still holds: nobody waited it out');
    assert.equal(await admin.zcard(k.queue), 0, 'no waiter left queued');
    await held.release();
    assert.equal(await admin.exists(name), 0, 'released: nobody was handed the lock');

    // Not settled: the call waits for the lock as before and times out while it is held.
    const again = await holder.client.acquire(name, { leaseMs: 10_000 });
    await assert.rejects(
      caller.client.runGuarded(name, { leaseMs: 1000, waitMs: 200, settled: () => false }, (p) =>
        p.get('work'),
      ),
      LockAcquireTimeoutError,
    );
    await again.release();
  });
});
