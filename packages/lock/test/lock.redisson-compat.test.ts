// DESIGN §3: "A Java service using Redisson getLock(name) and this service must exclude each other on
// the same name." The foreign side here runs Redisson's own acquire and unlock scripts, verbatim from
// seed 000 (see test/support/redisson.ts), with Redisson's owner ids (<uuid>:<threadId>), its channel
// name rule and its waiting loop (subscribe, try, wait for "0" or the TTL, retry). Both ways round:
// a foreign holder keeps us out and its release wakes our waiter; our holder keeps it out and our
// release wakes its waiter. The last part checks the scripts' reply types on the wire under RESP3.
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Redis } from 'ioredis';
import { track, until } from '../../../harness/async.ts';
import { RawRedis, type RespValue } from '../../../harness/resp.ts';
import { numsub, Recorder } from '../../../test/support/pubsub.ts';
import type { LockHandle } from '../src/index.ts';
import { lockKeys } from '../src/keys.ts';
import { replyInt } from '../src/lua.ts';
import { parseAcquireReply, parseReleaseReply } from '../src/replies.ts';
import {
  acquireInput,
  acquireScript,
  LOCK_SCRIPTS,
  releaseInput,
  releaseScript,
  renewInput,
  renewScript,
} from '../src/scripts.ts';
import { RETRY_CAP_MS } from '../src/waiting.ts';
import { useLockServer } from './support/lock.ts';
import { ForeignRedisson, REDISSON_LOCK_SCRIPT, redissonChannelName } from './support/redisson.ts';

const { server, admin, newClient: ours, closeAfter } = useLockServer('the compat tests');

/** A lease longer than the test may run: a wait that ends did not end by this lease lapsing. */
const LONG = 600_000;

/**
 * Our waiter asks again at least every RETRY_CAP_MS (its heartbeat) whatever the holder's TTL, so a
 * wake-up by the release is told from the heartbeat by the one-sided bound: before the heartbeat.
 */
function wokenByRelease(releasedAt: number): void {
  const took = Date.now() - releasedAt;
  assert.ok(took < RETRY_CAP_MS, `acquired ${took} ms after the release: by the heartbeat, not the release`);
}

function foreign(): ForeignRedisson {
  return new ForeignRedisson(server.client(), server.client());
}
async function record(...channels: string[]): Promise<Recorder> {
  return closeAfter(await Recorder.on(server, channels));
}

function pairs(flat: RespValue[]): Map<RespValue, RespValue> {
  const m = new Map<RespValue, RespValue>();
  for (let i = 0; i + 1 < flat.length; i += 2) m.set(flat[i] ?? null, flat[i + 1] ?? null);
  return m;
}

/** Redis Cluster's hash tag rule: the part between the first '{' and the next '}', if non-empty. */
function hashTag(key: string): string {
  const open = key.indexOf('{');
  if (open < 0) return key;
  const close = key.indexOf('}', open + 1);
  if (close < 0 || close === open + 1) return key;
  return key.slice(open + 1, close);
}

describe('Redisson (seed 000 scripts) and this library exclude each other on one name', () => {
  it('(a) foreign holds: our tryAcquire gets null, our acquire waits; the foreign release (publish "0") wakes it', async () => {
    const name = 'anyLock';
    const channel = 'redisson_lock__channel:{anyLock}';
    assert.equal(redissonChannelName(name), channel);
    const java = foreign();
    const { client } = ours();
    const rec = await record(channel);

    assert.equal(await java.tryAcquireOnce(name, 1, LONG), null, 'foreign acquire script returns nil');
    assert.deepEqual(await admin.hgetall(name), { [java.lockName(1)]: '1' });
    assert.ok((await admin.pttl(name)) > LONG - 60_000);

    assert.equal(await client.tryAcquire(name, { leaseMs: 5000 }), null);
    const t0 = Date.now();
    assert.equal(await client.tryAcquire(name, { leaseMs: 5000, waitMs: 200 }), null);
    assert.ok(Date.now() - t0 >= 199, 'waited out its budget (a timer never fires early)');
    assert.deepEqual(await admin.hgetall(name), { [java.lockName(1)]: '1' }, 'foreign hold untouched');
    assert.equal(await admin.zcard(lockKeys(name).queue), 0, 'a waiter that gave up left the queue');

    const waiting = track(client.acquire(name, { leaseMs: 5000, waitMs: 20_000 }));
    await until(
      'our waiter listens on the Redisson channel',
      async () => (await numsub(admin, channel)) === 2,
    );
    // Nothing was published that could wake it, and Redis still shows the foreign hold.
    assert.deepEqual(await rec.flush(), [], 'no unlock message yet');
    assert.deepEqual(await admin.hgetall(name), { [java.lockName(1)]: '1' });
    assert.equal(waiting.settled(), false, 'still waiting while the foreign lock is held');

    const released = Date.now();
    assert.equal(await java.unlock(name, 1, LONG), 1, 'foreign unlock script returns 1');
    const h = await waiting.promise;
    wokenByRelease(released);
    assert.deepEqual(rec.on(channel), ['0'], 'Redisson published its unlock message');
    assert.deepEqual(await admin.hgetall(name), { [h.owner]: '1' });

    // And now we hold it: the foreign acquire script is refused with our PTTL.
    const ttl = await java.tryAcquireOnce(name, 1, 10_000);
    assert.ok(ttl !== null && ttl > 0 && ttl <= 5000, `PTTL ${ttl}`);
    await h.release();
    assert.equal(await admin.exists(name), 0);
  });

  it('(b) we hold: the foreign acquire script returns a PTTL; our release publishes "0" to the subscribed foreign waiter, which then acquires', async () => {
    const name = 'order-42';
    const channel = 'redisson_lock__channel:{order-42}';
    const java = foreign();
    const { client } = ours();
    // Our lease outlasts the test: the foreign waiter (which retries at the holder's TTL) can only
    // get in by our release's message.
    const h = await client.acquire(name, { leaseMs: LONG });

    const ttl = await java.tryAcquireOnce(name, 7, 10_000);
    assert.ok(ttl !== null && ttl > LONG - 60_000 && ttl <= LONG, `foreign got PTTL ${ttl}`);
    assert.deepEqual(await admin.hgetall(name), { [h.owner]: '1' }, 'the refused script changed nothing');
    assert.equal(await java.unlock(name, 7, 10_000), null, 'foreign unlock of our lock: nil');
    assert.deepEqual(await admin.hgetall(name), { [h.owner]: '1' });

    const asked = java.attempts;
    const waiting = track(java.lock(name, 7, { leaseMs: 10_000, waitMs: 60_000 }));
    await until('foreign waiter subscribed', async () => (await numsub(admin, channel)) === 1);
    assert.deepEqual(java.channels, [channel]);
    // lock() tries once, subscribes, tries again, then sleeps on its latch: count from there.
    await until('the foreign waiter tried again after subscribing', () => java.attempts === asked + 2);
    const attemptsBefore = java.attempts;
    await sleep(300); // the window is the claim: a poller would try again within it
    assert.equal(waiting.settled(), false, 'foreign still waiting while we hold');
    assert.equal(java.attempts, attemptsBefore, 'the foreign waiter sleeps on the latch, it does not poll');

    await h.release();
    assert.equal(await waiting.promise, true, 'woken by our release (its TTL wait outlasts its wait)');
    assert.deepEqual(java.received.get(channel), ['0'], 'the foreign waiter received "0"');
    assert.deepEqual(await admin.hgetall(name), { [java.lockName(7)]: '1' });

    assert.equal(await client.tryAcquire(name, { leaseMs: 1000 }), null, 'and now we are the ones kept out');
    assert.equal(await java.unlock(name, 7, 10_000), 1);
    assert.equal(await admin.exists(name), 0);
  });

  it('(c) re-entry: a foreign owner that re-entered twice keeps us out until its second release, and vice versa', async () => {
    const name = 'reentry';
    const channel = redissonChannelName(name);
    const java = foreign();
    const { client } = ours();
    const rec = await record(channel);

    assert.equal(await java.tryAcquireOnce(name, 3, 10_000), null);
    assert.equal(await java.tryAcquireOnce(name, 3, 10_000), null, 're-entry by the same thread');
    assert.deepEqual(await admin.hgetall(name), { [java.lockName(3)]: '2' });
    assert.ok((await java.tryAcquireOnce(name, 4, 10_000)) !== null, 'another foreign thread is kept out');

    const waiting = track(client.acquire(name, { leaseMs: 5000, waitMs: 20_000 }));
    await until('our waiter queued', async () => (await admin.zcard(lockKeys(name).queue)) === 1);
    assert.equal(await java.unlock(name, 3, 10_000), 0, 'first foreign release: holds remain');
    assert.deepEqual(await admin.hgetall(name), { [java.lockName(3)]: '1' });
    assert.deepEqual(await rec.flush(), [], 'no unlock message while a hold remains');
    assert.equal(waiting.settled(), false, 'we are still out after one of two foreign releases');
    assert.equal(await client.tryAcquire(name, { leaseMs: 1000 }), null);

    const released = Date.now();
    assert.equal(await java.unlock(name, 3, 10_000), 1);
    const h = await waiting.promise;
    wokenByRelease(released);
    assert.deepEqual(await admin.hgetall(name), { [h.owner]: '1' });

    // Vice versa: our owner re-enters (nested withLock); the foreign waiter stays out until both release.
    await h.release();
    let foreignWaiting: ReturnType<typeof track<boolean>> | undefined;
    // Our lease outlasts the test: only our outer release's message can let the foreign waiter in.
    await client.withLock(name, { leaseMs: LONG }, async (outer) => {
      await client.withLock(name, { leaseMs: LONG }, async (inner) => {
        assert.equal(inner.holdCount, 2);
        assert.equal(await admin.hget(name, outer.owner), '2');
        foreignWaiting = track(java.lock(name, 3, { leaseMs: 10_000, waitMs: 60_000 }));
        await until('foreign waiter subscribed', async () => (await numsub(admin, channel)) === 2);
      });
      // Redis still shows our outer hold: the foreign waiter cannot be in.
      assert.deepEqual(await admin.hgetall(name), { [outer.owner]: '1' });
      assert.equal(foreignWaiting?.settled(), false, 'foreign still out after our inner release');
      const ttl = await java.tryAcquireOnce(name, 4, 10_000);
      assert.ok(ttl !== null && ttl > 0, 'the foreign script still gets a PTTL');
    });
    assert.ok(foreignWaiting);
    assert.equal(await foreignWaiting.promise, true, 'woken by the outer release');
    assert.deepEqual(await admin.hgetall(name), { [java.lockName(3)]: '1' });
    assert.equal(await java.unlock(name, 3, 10_000), 1);
  });

  it('(d) 5 foreign threads (two JVMs) and 5 of our clients increment a shared counter exactly, never overlapping', async (t) => {
    const name = 'hammer';
    const counterKey = 'hammer:count';
    const rounds = 20;
    const jvmA = foreign();
    const jvmB = foreign();
    // Thread ids repeat across JVMs on purpose: the owner id is <uuid>:<threadId>.
    const foreignThreads: Array<[ForeignRedisson, number]> = [
      [jvmA, 1],
      [jvmA, 2],
      [jvmA, 3],
      [jvmB, 1],
      [jvmB, 2],
    ];
    const ourWorkers = Array.from({ length: 5 }, () => ours());
    let inside = 0;
    let overlaps = 0;
    const order: string[] = [];
    const critical = async (r: Redis, who: string) => {
      inside += 1;
      if (inside > 1) overlaps += 1;
      order.push(who);
      // Read-modify-write across awaits: any overlap loses an increment.
      const v = Number((await r.get(counterKey)) ?? 0);
      await sleep(0); // a timer hop inside the critical section: overlaps would interleave here
      await r.set(counterKey, v + 1);
      inside -= 1;
    };

    await Promise.all([
      ...foreignThreads.map(async ([jvm, tid], i) => {
        const r = server.client();
        for (let n = 0; n < rounds; n++) {
          assert.equal(await jvm.lock(name, tid, { leaseMs: 5000, waitMs: 60_000 }), true);
          await critical(r, `F${i}`);
          assert.equal(await jvm.unlock(name, tid, 5000), 1);
        }
      }),
      ...ourWorkers.map(async ({ client, redis }, i) => {
        for (let n = 0; n < rounds; n++) {
          await client.withLock(name, { leaseMs: 2000, waitMs: 60_000 }, () => critical(redis, `O${i}`));
        }
      }),
    ]);

    // Who held the lock, in order (F foreign, O ours): our FIFO hand-off keeps the lock among our
    // queued waiters, so Redisson waiters typically get in only when our queue drains (see report).
    t.diagnostic(`holders in order: ${order.map((o) => o[0]).join('')}`);
    assert.equal(overlaps, 0);
    assert.equal(Number(await admin.get(counterKey)), 10 * rounds);
    assert.equal(order.length, 10 * rounds);
    assert.equal(await admin.exists(name), 0, 'lock deleted after the last release');
    assert.equal(await admin.zcard(lockKeys(name).queue), 0, 'no waiter left queued');
  });

  it('(e) a name with braces (stock:{P:1:0}:lock) uses Redisson’s prefixName rule and both sides still exclude', async () => {
    const name = 'stock:{P:1:0}:lock';
    const channel = 'redisson_lock__channel:stock:{P:1:0}:lock';
    assert.equal(redissonChannelName(name), channel, 'Redisson: no extra braces when the name has one');
    assert.equal(lockKeys(name).channel, channel, 'ours: the same channel');
    assert.equal(lockKeys('anyLock').channel, 'redisson_lock__channel:{anyLock}');
    const k = lockKeys(name);
    for (const key of [k.channel, k.token, k.queue, k.ours, k.latch('r1')]) {
      assert.equal(hashTag(key), 'P:1:0', `${key} shares the lock's slot`);
    }

    const java = foreign();
    const { client } = ours();
    // Foreign holds; our waiter listens on the same channel and is woken by the foreign release.
    assert.equal(await java.tryAcquireOnce(name, 1, LONG), null);
    assert.equal(await client.tryAcquire(name, { leaseMs: 1000 }), null);
    const waiting = track(client.acquire(name, { leaseMs: LONG, waitMs: 60_000 }));
    await until('our waiter listens on the channel', async () => (await numsub(admin, channel)) === 1);
    assert.deepEqual(await admin.hgetall(name), { [java.lockName(1)]: '1' }, 'the foreign hold is on');
    assert.equal(waiting.settled(), false);
    const released = Date.now();
    assert.equal(await java.unlock(name, 1, LONG), 1);
    const h: LockHandle = await waiting.promise;
    wokenByRelease(released);
    assert.deepEqual(await admin.hgetall(name), { [h.owner]: '1' });

    // We hold; the foreign waiter listens on its own computation of the channel and is woken by ours.
    assert.ok((await java.tryAcquireOnce(name, 1, 10_000)) !== null);
    const foreignWaiting = track(java.lock(name, 1, { leaseMs: 10_000, waitMs: 60_000 }));
    await until('foreign waiter subscribed', async () => (await numsub(admin, channel)) === 1);
    assert.deepEqual(await admin.hgetall(name), { [h.owner]: '1' }, 'our hold is on');
    assert.equal(foreignWaiting.settled(), false);
    await h.release();
    assert.equal(await foreignWaiting.promise, true, 'woken by our release (our lease outlasts its wait)');
    assert.deepEqual(java.received.get(channel), ['0']);
    assert.deepEqual(await admin.hgetall(name), { [java.lockName(1)]: '1' });
    assert.equal(await java.unlock(name, 1, 10_000), 1);
  });
});

describe('lock script replies on the wire: RESP2 and RESP3', () => {
  const sha1 = (s: string) => createHash('sha1').update(s).digest('hex');
  const [acquire, release, renew] = LOCK_SCRIPTS;

  for (const proto of [2, 3] as const) {
    it(`RESP${proto}: array of two integers ({token, count} or {0, pttl}) / integer / null, and the parsers accept the decoded values`, async () => {
      assert.ok(acquire && release && renew);
      const raw = await RawRedis.connect(server.port);
      try {
        const hello = await raw.command('HELLO', proto);
        assert.equal(hello.raw[0], proto === 3 ? '%' : '*', 'HELLO answers a map under RESP3');
        // RESP3 answers HELLO with a map, RESP2 with a flat array of field, value, field, value ...
        const fields =
          hello.value instanceof Map ? hello.value : pairs(Array.isArray(hello.value) ? hello.value : []);
        assert.equal(fields.get('proto'), proto);

        const acquireSha = (await raw.command('SCRIPT', 'LOAD', acquire.source)).value;
        assert.equal(acquireSha, sha1(acquire.source));
        const releaseSha = (await raw.command('SCRIPT', 'LOAD', release.source)).value;
        assert.equal(releaseSha, sha1(release.source));

        const name = `resp${proto}:lock`;
        const k = lockKeys(name);
        // The key counts the headers of acquire.lua / release.lua document.
        assert.equal(acquire.numberOfKeys, 5);
        assert.equal(release.numberOfKeys, 6);
        const acquireKeys = acquire.numberOfKeys;
        const releaseKeys = release.numberOfKeys;
        const req = (owner: string, mode: 'try' | 'wait' = 'try', waitId = '') =>
          acquireScript.values(
            acquireInput({
              name,
              owner,
              leaseMs: 5000,
              mode,
              clientId: `c-${owner}`,
              eligibleMs: mode === 'try' ? 0 : 10_000,
              waitId,
            }),
          );
        const evalsha = (sha: RespValue, numKeys: number, args: (string | number)[]) =>
          raw.command('EVALSHA', String(sha), numKeys, ...args);

        // Acquired: an array of two integers {token, holdCount}.
        const got = await evalsha(acquireSha, acquireKeys, req('o1'));
        assert.equal(got.raw, '*2\r\n:1\r\n:1\r\n');
        assert.deepEqual(parseAcquireReply(got.value), { acquired: true, token: 1, holdCount: 1 });
        const again = await raw.command('EVAL', acquire.source, acquireKeys, ...req('o1'));
        assert.equal(again.raw, '*2\r\n:2\r\n:2\r\n', 'EVAL of the same source, re-entry');
        assert.deepEqual(parseAcquireReply(again.value), { acquired: true, token: 2, holdCount: 2 });

        // Held by one of ours (the flag is set): an array {0, pttl}, whatever the mode.
        const held = await evalsha(acquireSha, acquireKeys, req('o2'));
        const heldMatch = /^\*2\r\n:0\r\n:(\d+)\r\n$/.exec(held.raw);
        assert.ok(heldMatch, `held reply ${JSON.stringify(held.raw)}`);
        const parsedHeld = parseAcquireReply(held.value);
        assert.deepEqual(parsedHeld, { acquired: false, pttl: Number(heldMatch[1]), handOffExpected: true });
        assert.ok(!parsedHeld.acquired && parsedHeld.pttl > 0 && parsedHeld.pttl <= 5000);
        const queued = await evalsha(acquireSha, acquireKeys, req('o2', 'wait', 'c-o2:w1'));
        assert.match(queued.raw, /^\*2\r\n:0\r\n:\d+\r\n$/);
        assert.equal(parseAcquireReply(queued.value).acquired, false);
        const waits = (await admin.zrange(k.queue, 0, -1)).map((e) => JSON.parse(e)[0]);
        assert.deepEqual(waits, ['c-o2:w1'], 'queued under its wait id');

        // Release by a non-owner: null ('_' in RESP3, the null bulk string in RESP2).
        const rel = (
          owner: string,
          requestId: string,
          mode: 'release' | 'cancel' = 'release',
          waitId = '',
        ) => {
          // A cancel names the wait's queue entry by its parts, as req() queued it.
          const wait = { clientId: `c-${owner}`, eligibleMs: [10_000, 10_000] as [number, number] };
          return evalsha(
            releaseSha,
            releaseKeys,
            releaseScript.values(releaseInput({ name, owner, leaseMs: 5000, mode, requestId, waitId, wait })),
          );
        };
        const notHeld = await rel('o2', 'r-o2');
        assert.equal(notHeld.raw, proto === 3 ? '_\r\n' : '$-1\r\n');
        assert.equal(notHeld.value, null);
        assert.equal(parseReleaseReply(notHeld.value), null);
        // A cancel by a wait that was handed nothing: null too, and the wait left the queue.
        const cancelled = await rel('o2', 'r-o2-cancel', 'cancel', 'c-o2:w1');
        assert.equal(cancelled.raw, proto === 3 ? '_\r\n' : '$-1\r\n');
        assert.equal(parseReleaseReply(cancelled.value), null);
        assert.equal(await admin.zcard(k.queue), 0);

        // Holds remain: 0; released: 1; the same request again is answered from the latch: 1.
        const down = await rel('o1', 'r-1');
        assert.equal(down.raw, ':0\r\n');
        assert.equal(parseReleaseReply(down.value), 0);
        const freed = await rel('o1', 'r-2');
        assert.equal(freed.raw, ':1\r\n');
        assert.equal(parseReleaseReply(freed.value), 1);
        const latched = await rel('o1', 'r-2');
        assert.equal(latched.raw, ':1\r\n');
        assert.equal(parseReleaseReply(latched.value), 1);
        const gone = await rel('o1', 'r-3');
        assert.equal(parseReleaseReply(gone.value), null, 'released already: not held');
        assert.equal(await admin.exists(k.ours), 0, 'the flag went with the lock');

        // Held by a foreign (Redisson) holder: no flag, so the bare integer PTTL (Redisson's contract).
        const javaHolds = await raw.command('EVAL', REDISSON_LOCK_SCRIPT, 1, name, 5000, 'java:9');
        assert.equal(javaHolds.raw, proto === 3 ? '_\r\n' : '$-1\r\n');
        const foreignHeld = await evalsha(acquireSha, acquireKeys, req('o2'));
        assert.match(foreignHeld.raw, /^:\d+\r\n$/);
        const parsedForeign = parseAcquireReply(foreignHeld.value);
        assert.deepEqual(parsedForeign, {
          acquired: false,
          pttl: replyInt(foreignHeld.value),
          handOffExpected: false,
        });
        assert.ok(!parsedForeign.acquired && parsedForeign.pttl > 0 && parsedForeign.pttl <= 5000);
        await admin.del(name);

        // Renewal: integers 1 / 0.
        await evalsha(acquireSha, acquireKeys, req('o3'));
        const renewed = await raw.command(
          'EVAL',
          renew.source,
          2,
          ...renewScript.values(renewInput(name, 'o3', 5000)),
        );
        assert.equal(renewed.raw, ':1\r\n');
        assert.equal(replyInt(renewed.value), 1);
        const refused = await raw.command(
          'EVAL',
          renew.source,
          2,
          ...renewScript.values(renewInput(name, 'o1', 5000)),
        );
        assert.equal(refused.raw, ':0\r\n');
        assert.equal(replyInt(refused.value), 0);

        // Redisson's own scripts under the same protocol: nil on success is null, a refusal an integer.
        const java = await raw.command('EVAL', REDISSON_LOCK_SCRIPT, 1, name, 5000, 'java:1');
        assert.match(java.raw, /^:\d+\r\n$/, 'Redisson acquire refused while o3 holds: a PTTL');
        const javaFree = await raw.command('EVAL', REDISSON_LOCK_SCRIPT, 1, `${name}:free`, 5000, 'java:1');
        assert.equal(javaFree.raw, proto === 3 ? '_\r\n' : '$-1\r\n', 'Redisson acquire success: nil');
      } finally {
        raw.close();
      }
    });
  }
});
