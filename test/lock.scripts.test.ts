// The lock's Lua scripts on their own, called directly through a connection where withLockScripts
// defined them, with argument lists built by acquireArgs/releaseArgs. Each case checks the reply and
// the state left in Redis: the lock hash and its PTTL, the fencing counter, the waiter queue and info
// hash with their TTLs, the unlock latch, and what was (and was not) published where.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { lockKeys } from '../src/lock/index.ts';
import {
  type AcquireRequest,
  acquireArgs,
  type LockRedis,
  type ReleaseMode,
  releaseArgs,
  withLockScripts,
} from '../src/lock/scripts.ts';
import { Recorder } from './support/pubsub.ts';
import { RedisServer } from './support/redis-server.ts';

let server: RedisServer;
let redis: LockRedis;
const recorders: Recorder[] = [];

before(async () => {
  server = await RedisServer.start();
  redis = withLockScripts(server.client());
});
after(async () => {
  await Promise.all(recorders.map((r) => r.close()));
  await server.stop();
});

let requestSeq = 0;
const wake = (clientId: string) => `flashsale_lock__wake:${clientId}`;

type Acquire = Partial<AcquireRequest> & Pick<AcquireRequest, 'name' | 'owner'>;
function acquire(r: Acquire): Promise<unknown> {
  return redis.flashsaleLockAcquire(
    ...acquireArgs({ leaseMs: 5000, mode: 'try', clientId: `client-of-${r.owner}`, eligibleMs: 0, ...r }),
  );
}
function release(
  name: string,
  owner: string,
  opts: { mode?: ReleaseMode; requestId?: string; leaseMs?: number } = {},
): Promise<unknown> {
  requestSeq += 1;
  return redis.flashsaleLockRelease(
    ...releaseArgs(
      name,
      owner,
      opts.leaseMs ?? 5000,
      opts.mode ?? 'release',
      opts.requestId ?? `req-${requestSeq}`,
    ),
  );
}
function renew(name: string, leaseMs: number, owner: string): Promise<unknown> {
  return redis.flashsaleLockRenew(name, leaseMs, owner);
}
async function token(name: string): Promise<number> {
  return Number(await redis.get(lockKeys(name).token));
}
async function serverMs(): Promise<number> {
  const [s, us] = (await redis.time()) as [number | string, number | string];
  return Number(s) * 1000 + Math.floor(Number(us) / 1000);
}
async function record(...channels: string[]): Promise<Recorder> {
  const r = await Recorder.on(server, channels);
  recorders.push(r);
  return r;
}

describe('acquire.lua', () => {
  it('free lock: {token, 1}, PEXPIRE set to the lease, token counter incremented', async () => {
    const name = 'a:free';
    assert.deepEqual(await acquire({ name, owner: 'o1', leaseMs: 4000 }), [1, 1]);
    assert.deepEqual(await redis.hgetall(name), { o1: '1' });
    const pttl = await redis.pttl(name);
    assert.ok(pttl > 3500 && pttl <= 4000, `pttl ${pttl}`);
    assert.equal(await token(name), 1);
    assert.equal(await redis.pttl(lockKeys(name).token), -1, 'the fencing counter has no TTL');
    // A fresh acquire after the lock is gone continues the counter.
    await redis.del(name);
    assert.deepEqual(await acquire({ name, owner: 'o2' }), [2, 1]);
    assert.equal(await token(name), 2);
  });

  it('re-entry: count 2, a new token, the lease reset', async () => {
    const name = 'a:reentry';
    assert.deepEqual(await acquire({ name, owner: 'o1', leaseMs: 1000 }), [1, 1]);
    assert.deepEqual(await acquire({ name, owner: 'o1', leaseMs: 9000 }), [2, 2]);
    assert.deepEqual(await redis.hgetall(name), { o1: '2' });
    assert.ok((await redis.pttl(name)) > 8000, 'PEXPIRE reset to the re-entry’s lease');
  });

  it("held by another owner in 'try' mode: the PTTL, nothing queued, nothing changed", async () => {
    const name = 'a:try';
    const k = lockKeys(name);
    await acquire({ name, owner: 'holder', leaseMs: 3000 });
    const reply = await acquire({ name, owner: 'other', leaseMs: 60_000, mode: 'try', eligibleMs: 10_000 });
    assert.equal(typeof reply, 'number');
    assert.ok((reply as number) > 2500 && (reply as number) <= 3000, `pttl ${reply}`);
    assert.deepEqual(await redis.hgetall(name), { holder: '1' });
    assert.ok((await redis.pttl(name)) <= 3000, 'the holder’s lease is not touched');
    assert.equal(await redis.exists(k.queue, k.waiters), 0, 'not queued');
    assert.equal(await token(name), 1, 'no token spent on a refusal');
  });

  it('held in \'wait\' mode: the PTTL, and queued (zset member + info "<clientId>|<lease>|<eligibleUntil>") with a TTL', async () => {
    const name = 'a:wait';
    const k = lockKeys(name);
    await acquire({ name, owner: 'holder', leaseMs: 3000 });
    const t0 = await serverMs();
    const reply = await acquire({
      name,
      owner: 'w1',
      clientId: 'cw1',
      leaseMs: 7000,
      mode: 'wait',
      eligibleMs: 10_000,
    });
    const t1 = await serverMs();
    assert.ok(typeof reply === 'number' && reply > 0 && reply <= 3000, `pttl ${reply}`);
    assert.deepEqual(await redis.hgetall(name), { holder: '1' });

    const score = Number(await redis.zscore(k.queue, 'w1'));
    assert.ok(score >= t0 * 1000 && score <= (t1 + 1) * 1000, 'queued at server time in microseconds');
    const info = await redis.hget(k.waiters, 'w1');
    const m = /^cw1\|7000\|(\d+)$/.exec(info ?? '');
    assert.ok(m, `info ${info}`);
    const eligibleUntil = Number(m[1]);
    assert.ok(
      eligibleUntil >= t0 + 10_000 && eligibleUntil <= t1 + 10_000,
      'eligible until now + eligibleMs',
    );

    // The queue keys expire on their own: eligibility + lease + 60 s.
    const keep = 10_000 + 7000 + 60_000;
    for (const key of [k.queue, k.waiters]) {
      const ttl = await redis.pttl(key);
      assert.ok(ttl > keep - 1000 && ttl <= keep, `${key} pttl ${ttl}`);
    }
    // A later waiter with a shorter keep does not shorten it.
    await acquire({ name, owner: 'w2', leaseMs: 1000, mode: 'wait', eligibleMs: 0 });
    assert.ok((await redis.pttl(k.queue)) > 61_000 + 1000);
    assert.equal(await token(name), 1, 'waiting spends no token');
  });

  it("ZADD NX: a 'retry' keeps the waiter’s place and refreshes its info", async () => {
    const name = 'a:retry-place';
    const k = lockKeys(name);
    await acquire({ name, owner: 'holder', leaseMs: 10_000 });
    await acquire({ name, owner: 'w1', clientId: 'cw1', mode: 'wait', eligibleMs: 1000 });
    await sleep(5);
    await acquire({ name, owner: 'w2', clientId: 'cw2', mode: 'wait', eligibleMs: 1000 });
    const score1 = await redis.zscore(k.queue, 'w1');
    await sleep(5);
    const t0 = await serverMs();
    const reply = await acquire({ name, owner: 'w1', clientId: 'cw1', mode: 'retry', eligibleMs: 20_000 });
    assert.equal(typeof reply, 'number');
    assert.equal(await redis.zscore(k.queue, 'w1'), score1, 'same score after the retry');
    assert.deepEqual(await redis.zrange(k.queue, 0, -1), ['w1', 'w2'], 'still ahead of w2');
    const until = Number((await redis.hget(k.waiters, 'w1'))?.split('|')[2]);
    assert.ok(until >= t0 + 20_000, 'eligibility refreshed by the retry');
  });

  it("'retry' after a hand-off: the current token and hold count, nothing incremented", async () => {
    const name = 'a:retry-handed';
    const k = lockKeys(name);
    await acquire({ name, owner: 'holder' });
    await acquire({ name, owner: 'w1', mode: 'wait', eligibleMs: 10_000 });
    assert.equal(await release(name, 'holder'), 1);
    assert.deepEqual(await redis.hgetall(name), { w1: '1' }, 'handed to w1');
    const handed = await token(name);
    assert.equal(handed, 2);

    assert.deepEqual(await acquire({ name, owner: 'w1', mode: 'retry', eligibleMs: 10_000 }), [handed, 1]);
    assert.deepEqual(await redis.hgetall(name), { w1: '1' }, 'count not incremented');
    assert.equal(await token(name), handed, 'no new token');
    assert.equal(await redis.zcard(k.queue), 0);
  });

  it("'retry' that finds the lock free takes it and leaves the queue", async () => {
    const name = 'a:retry-free';
    const k = lockKeys(name);
    await acquire({ name, owner: 'holder', leaseMs: 50 });
    await acquire({ name, owner: 'w1', mode: 'wait', eligibleMs: 10_000 });
    await acquire({ name, owner: 'w2', mode: 'wait', eligibleMs: 10_000 });
    await sleep(80); // the holder's lease lapses; no release, so no hand-off
    assert.deepEqual(await acquire({ name, owner: 'w1', mode: 'retry', eligibleMs: 10_000 }), [2, 1]);
    assert.equal(await redis.zscore(k.queue, 'w1'), null);
    assert.equal(await redis.hget(k.waiters, 'w1'), null);
    assert.deepEqual(await redis.zrange(k.queue, 0, -1), ['w2'], 'the other waiter keeps its place');
  });
});

describe('release.lua', () => {
  it('a non-owner gets nil and the lock is untouched', async () => {
    const name = 'r:not-owner';
    await acquire({ name, owner: 'o1', leaseMs: 3000 });
    const rec = await record(lockKeys(name).channel);
    assert.equal(await release(name, 'intruder', { leaseMs: 60_000 }), null);
    assert.deepEqual(await redis.hgetall(name), { o1: '1' });
    assert.ok((await redis.pttl(name)) <= 3000, 'lease not reset by the refused release');
    assert.equal(await release('r:no-such-lock', 'o1'), null, 'a missing lock is not held either');
    assert.deepEqual(await rec.flush(), [], 'nothing published');
  });

  it('counting down: 0 while holds remain, and the lease reset to ARGV[2]', async () => {
    const name = 'r:count';
    await acquire({ name, owner: 'o1', leaseMs: 2000 });
    await acquire({ name, owner: 'o1', leaseMs: 2000 });
    const rec = await record(lockKeys(name).channel);
    assert.equal(await release(name, 'o1', { leaseMs: 30_000 }), 0);
    assert.deepEqual(await redis.hgetall(name), { o1: '1' });
    assert.ok((await redis.pttl(name)) > 25_000, 'PEXPIRE reset');
    assert.deepEqual(await rec.flush(), [], 'no unlock message while a hold remains');
  });

  it('at zero with an empty queue: DEL and PUBLISH "0" on redisson_lock__channel:{name}', async () => {
    const name = 'r:free';
    assert.equal(lockKeys(name).channel, 'redisson_lock__channel:{r:free}');
    await acquire({ name, owner: 'o1' });
    const rec = await record('redisson_lock__channel:{r:free}');
    const before = await token(name);
    assert.equal(await release(name, 'o1'), 1);
    assert.equal(await redis.exists(name), 0);
    assert.equal(await rec.next('redisson_lock__channel:{r:free}'), '0');
    assert.equal(await token(name), before, 'the counter is not reset by a release');
    assert.equal(await redis.pttl(lockKeys(name).token), -1);
  });

  it('with queued waiters: hand-off to the oldest, its lease and a new token, told on its wake channel only', async () => {
    const name = 'r:handoff';
    const k = lockKeys(name);
    await acquire({ name, owner: 'holder', leaseMs: 3000 });
    await acquire({ name, owner: 'w1', clientId: 'cw1', leaseMs: 7777, mode: 'wait', eligibleMs: 10_000 });
    await sleep(2);
    await acquire({ name, owner: 'w2', clientId: 'cw2', leaseMs: 8888, mode: 'wait', eligibleMs: 10_000 });
    const rec = await record(k.channel, wake('cw1'), wake('cw2'));
    const before = await token(name);

    assert.equal(await release(name, 'holder'), 1);
    assert.deepEqual(await redis.hgetall(name), { w1: '1' }, 'w1 owns it with count 1');
    const pttl = await redis.pttl(name);
    assert.ok(pttl > 7000 && pttl <= 7777, `w1’s lease in force (pttl ${pttl})`);
    assert.equal(await token(name), before + 1, 'token incremented');
    assert.equal(await rec.next(wake('cw1')), JSON.stringify([name, 'w1', before + 1]));
    assert.deepEqual(JSON.parse(rec.on(wake('cw1'))[0] ?? ''), [name, 'w1', before + 1]);
    await rec.flush();
    assert.deepEqual(rec.on(k.channel), [], 'no message on the Redisson channel');
    assert.deepEqual(rec.on(wake('cw2')), [], 'the other waiter is not told');
    assert.deepEqual(await redis.zrange(k.queue, 0, -1), ['w2']);
    assert.deepEqual(Object.keys(await redis.hgetall(k.waiters)), ['w2']);
  });

  it('waiters past their eligibility (and entries without info) are skipped and removed', async () => {
    const name = 'r:skip';
    const k = lockKeys(name);
    await acquire({ name, owner: 'holder' });
    await redis.zadd(k.queue, 0, 'ghost'); // oldest of all, but no info: a crashed half-write
    await acquire({ name, owner: 'stale', clientId: 'cstale', mode: 'wait', eligibleMs: 1 });
    await sleep(20);
    await acquire({
      name,
      owner: 'live',
      clientId: 'clive',
      leaseMs: 6000,
      mode: 'wait',
      eligibleMs: 10_000,
    });
    const rec = await record(k.channel, wake('cstale'), wake('clive'));
    assert.deepEqual(await redis.zrange(k.queue, 0, -1), ['ghost', 'stale', 'live']);

    assert.equal(await release(name, 'holder'), 1);
    assert.deepEqual(await redis.hgetall(name), { live: '1' });
    assert.equal(await redis.zcard(k.queue), 0, 'ghost and stale popped');
    assert.equal(await redis.hget(k.waiters, 'stale'), null);
    assert.equal(await rec.next(wake('clive')), JSON.stringify([name, 'live', 2]));
    await rec.flush();
    assert.deepEqual(rec.on(wake('cstale')), []);
    assert.deepEqual(rec.on(k.channel), []);

    // Only ineligible waiters left: the lock is deleted and Redisson's "0" published instead.
    await acquire({ name, owner: 'stale2', clientId: 'cstale', mode: 'wait', eligibleMs: 1 });
    await sleep(20);
    assert.equal(await release(name, 'live'), 1);
    assert.equal(await redis.exists(name), 0);
    assert.equal(await rec.next(k.channel), '0');
    assert.equal(await redis.zcard(k.queue), 0);
    await rec.flush();
    assert.deepEqual(rec.on(wake('cstale')), []);
  });

  it('unlock latch: the same request id applied twice counts down once; the latch has a TTL', async () => {
    const name = 'r:latch';
    await acquire({ name, owner: 'o1' });
    await acquire({ name, owner: 'o1' });
    const rec = await record(lockKeys(name).channel);
    assert.equal(await release(name, 'o1', { requestId: 'same' }), 0);
    assert.equal(await release(name, 'o1', { requestId: 'same' }), 0, 'answered from the latch');
    assert.deepEqual(await redis.hgetall(name), { o1: '1' }, 'count 2 → 1, not 0');
    const latchKey = lockKeys(name).latch('same');
    assert.equal(latchKey, 'redisson_unlock_latch:{r:latch}:same');
    const ttl = await redis.pttl(latchKey);
    assert.ok(ttl > 0 && ttl <= 10_000, `latch pttl ${ttl}`);

    assert.equal(await release(name, 'o1', { requestId: 'last' }), 1);
    assert.equal(await redis.exists(name), 0);
    await acquire({ name, owner: 'o2' }); // someone else takes the lock ...
    assert.equal(
      await release(name, 'o1', { requestId: 'last' }),
      1,
      '... and a replay is answered, not run',
    );
    assert.deepEqual(await redis.hgetall(name), { o2: '1' }, 'the replay did not touch o2’s lock');
    await rec.flush();
    assert.deepEqual(rec.on(lockKeys(name).channel), ['0'], 'published once, not per replay');
  });

  it("'cancel' removes the waiter from the queue and leaves the holder’s lock", async () => {
    const name = 'r:cancel';
    const k = lockKeys(name);
    await acquire({ name, owner: 'holder' });
    await acquire({ name, owner: 'w1', mode: 'wait', eligibleMs: 10_000 });
    await acquire({ name, owner: 'w2', mode: 'wait', eligibleMs: 10_000 });
    assert.equal(await release(name, 'w1', { mode: 'cancel' }), null, 'w1 held nothing');
    assert.deepEqual(await redis.zrange(k.queue, 0, -1), ['w2']);
    assert.equal(await redis.hget(k.waiters, 'w1'), null);
    assert.deepEqual(await redis.hgetall(name), { holder: '1' });
    assert.equal(await release(name, 'holder'), 1);
    assert.deepEqual(await redis.hgetall(name), { w2: '1' }, 'the cancelled waiter is not handed the lock');
  });

  it("'cancel' by a waiter the lock was handed to meanwhile passes it on to the next waiter", async () => {
    const name = 'r:cancel-handed';
    const k = lockKeys(name);
    await acquire({ name, owner: 'holder' });
    await acquire({ name, owner: 'w1', clientId: 'cw1', mode: 'wait', eligibleMs: 10_000 });
    await sleep(2);
    await acquire({ name, owner: 'w2', clientId: 'cw2', leaseMs: 4444, mode: 'wait', eligibleMs: 10_000 });
    const rec = await record(k.channel, wake('cw1'), wake('cw2'));
    assert.equal(await release(name, 'holder'), 1);
    assert.deepEqual(await redis.hgetall(name), { w1: '1' });
    assert.equal(await rec.next(wake('cw1')), JSON.stringify([name, 'w1', 2]));

    assert.equal(await release(name, 'w1', { mode: 'cancel' }), 1);
    assert.deepEqual(await redis.hgetall(name), { w2: '1' }, 'passed on to w2');
    assert.ok((await redis.pttl(name)) > 4000, 'with w2’s lease');
    assert.equal(await rec.next(wake('cw2')), JSON.stringify([name, 'w2', 3]));
    await rec.flush();
    assert.deepEqual(rec.on(k.channel), []);

    // Cancelled again with nobody left: deleted and "0" published.
    assert.equal(await release(name, 'w2', { mode: 'cancel' }), 1);
    assert.equal(await redis.exists(name), 0);
    assert.equal(await rec.next(k.channel), '0');
  });

  it("'force' deletes any holder (whatever its count) and hands off or publishes; nil on a free lock", async () => {
    const name = 'r:force';
    const k = lockKeys(name);
    const rec = await record(k.channel, wake('cw1'));
    assert.equal(await release(name, '', { mode: 'force' }), null, 'nothing to force');
    await acquire({ name, owner: 'holder' });
    await acquire({ name, owner: 'holder' });
    await acquire({ name, owner: 'holder' });
    await acquire({ name, owner: 'w1', clientId: 'cw1', leaseMs: 6000, mode: 'wait', eligibleMs: 10_000 });
    assert.equal(await token(name), 3);

    assert.equal(await release(name, '', { mode: 'force' }), 1);
    assert.deepEqual(await redis.hgetall(name), { w1: '1' }, 'count 3 ignored; handed to w1');
    assert.equal(await token(name), 4);
    assert.equal(await rec.next(wake('cw1')), JSON.stringify([name, 'w1', 4]));
    await rec.flush();
    assert.deepEqual(rec.on(k.channel), []);

    assert.equal(await release(name, '', { mode: 'force' }), 1);
    assert.equal(await redis.exists(name), 0);
    assert.equal(await rec.next(k.channel), '0');
    assert.equal(await token(name), 4, 'force does not reset the counter');
    assert.equal(await redis.pttl(k.token), -1);
    assert.deepEqual(await acquire({ name, owner: 'next' }), [5, 1], 'the next acquire continues it');
    assert.equal(await release(name, 'holder'), null, 'the forced-out holder no longer holds anything');
  });
});

describe('renew.lua', () => {
  it('1 and a new PEXPIRE for the owner; 0 and no change for anyone else', async () => {
    const name = 'n:renew';
    await acquire({ name, owner: 'o1', leaseMs: 2000 });
    assert.equal(await renew(name, 20_000, 'o1'), 1);
    assert.ok((await redis.pttl(name)) > 19_000);
    assert.equal(await renew(name, 60_000, 'other'), 0);
    const pttl = await redis.pttl(name);
    assert.ok(pttl <= 20_000 && pttl > 19_000, `pttl ${pttl} unchanged`);
    assert.deepEqual(await redis.hgetall(name), { o1: '1' });
    assert.equal(await renew('n:absent', 5000, 'o1'), 0);
    assert.equal(await redis.exists('n:absent'), 0, 'renewal never creates a lock');
  });
});

describe('fencing counter', () => {
  it('never expires and is never reset, across acquire, re-entry, hand-off, release and force', async () => {
    const name = 'f:counter';
    const k = lockKeys(name);
    const seen: number[] = [];
    const grab = async (owner: string) => {
      const reply = (await acquire({ name, owner, leaseMs: 100 })) as [number, number];
      seen.push(reply[0]);
    };
    await grab('a');
    await grab('a');
    await acquire({ name, owner: 'b', mode: 'wait', eligibleMs: 10_000 });
    await release(name, 'a');
    await release(name, 'a'); // hand-off to b
    seen.push(await token(name));
    await release(name, '', { mode: 'force' });
    await grab('c');
    await sleep(150); // c's lease lapses: the lock key is gone, the counter is not
    assert.equal(await redis.exists(name), 0);
    assert.equal(await redis.pttl(k.token), -1);
    await grab('d');
    assert.deepEqual(seen, [1, 2, 3, 4, 5]);
  });
});
