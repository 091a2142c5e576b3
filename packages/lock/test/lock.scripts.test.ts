// The lock's Lua scripts on their own, run by EVALSHA with the inputs acquireInput/releaseInput build
// (raw replies, before parsing). Each case checks the reply and
// the state left in Redis: the lock hash and its PTTL, the fencing counter, the waiter queue (one entry
// per acquire call, carrying what a hand-off needs) with its TTL, the "held by one of ours" note (which
// names the wait a hold was handed to), the unlock latch, and what was (and was not) published where.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { Redis } from 'ioredis';
import { redisNow, until, untilRedisPasses } from '../../../harness/async.ts';
import { RedisServer } from '../../../harness/redis-server.ts';
import { Recorder } from '../../../test/support/pubsub.ts';
import {
  fairAcquireInput,
  fairAcquireScript,
  fairReleaseInput,
  fairReleaseScript,
  type QueuedAcquire,
  redlockAcquireInput,
  redlockAcquireScript,
  redlockReleaseInput,
  redlockReleaseScript,
  rwAcquireInput,
  rwAcquireScript,
  rwReleaseInput,
  rwReleaseScript,
  rwRenewScript,
} from '../src/family-scripts.ts';
import { lockKeys } from '../src/keys.ts';
import type { ScriptInput, TypedScript } from '../src/lua.ts';
import { parseAcquireReply } from '../src/replies.ts';
import {
  type AcquireRequest,
  acquireInput,
  acquireScript,
  type ReleaseMode,
  releaseInput,
  releaseScript,
  renewInput,
  renewScript,
} from '../src/scripts.ts';
import { REDISSON_LOCK_SCRIPT } from './support/redisson.ts';

let server: RedisServer;
let redis: Redis;
const recorders: Recorder[] = [];

before(async () => {
  server = await RedisServer.start();
  redis = server.client();
});
after(async () => {
  await Promise.all(recorders.map((r) => r.close()));
  await server.stop();
});

let requestSeq = 0;
/** The script's raw reply (what the parsers get). */
function raw<K extends string, A extends string>(
  script: TypedScript<K, A, unknown>,
  input: ScriptInput<K, A>,
): Promise<unknown> {
  return redis.eval(script.source, script.numberOfKeys, ...script.values(input));
}
const wake = (clientId: string) => `flashsale_lock__wake:${clientId}`;

type Acquire = Partial<AcquireRequest> & Pick<AcquireRequest, 'name' | 'owner'>;
/** One acquire; the wait id defaults to one per owner (`<owner>#w`), tests that need more pass their own. */
function acquire(r: Acquire): Promise<unknown> {
  return raw(
    acquireScript,
    acquireInput({
      leaseMs: 5000,
      mode: 'try',
      clientId: `client-of-${r.owner}`,
      eligibleMs: 0,
      waitId: `${r.owner}#w`,
      ...r,
    }),
  );
}
/** A queued acquire (mode 'wait'), eligible for a hand-off for 10 s unless the request says otherwise. */
function wait(r: Acquire): Promise<unknown> {
  return acquire({ mode: 'wait', eligibleMs: 10_000, ...r });
}
/**
 * One release. starvationMs defaults to 0 here: every queued waiter counts as starved, so a release
 * hands the lock on directly (starvation mode); the barging tests pass a bound of their own.
 */
async function release(
  name: string,
  owner: string,
  opts: {
    mode?: ReleaseMode;
    requestId?: string;
    leaseMs?: number;
    waitId?: string;
    starvationMs?: number;
  } = {},
): Promise<unknown> {
  requestSeq += 1;
  // A cancel names its wait's queue entry by its parts, as the client does (the one queued now, if any).
  const entry = (await queued(name)).find((e) => e.waitId === opts.waitId);
  return raw(
    releaseScript,
    releaseInput({
      name,
      owner,
      mode: opts.mode ?? 'release',
      requestId: opts.requestId ?? `req-${requestSeq}`,
      waitId: opts.waitId,
      starvationMs: opts.starvationMs ?? 0,
      leaseMs: opts.leaseMs ?? entry?.leaseMs ?? 5000,
      wait:
        opts.mode === 'cancel' && entry
          ? { clientId: entry.clientId, eligibleMs: [entry.eligibleMs, entry.eligibleMs] }
          : undefined,
    }),
  );
}
function renew(name: string, leaseMs: number, owner: string): Promise<unknown> {
  return raw(renewScript, renewInput(name, owner, leaseMs));
}
/** A Java Redisson client takes the lock with its own script: no flag, no token, no queue. */
function foreignHold(name: string, owner: string, leaseMs: number): Promise<unknown> {
  return redis.eval(REDISSON_LOCK_SCRIPT, 1, name, leaseMs, owner);
}
async function token(name: string): Promise<number> {
  return Number(await redis.get(lockKeys(name).token));
}
/** Waits until Redis' clock has moved past this ms: the next wait's queue stamp (µs) cannot tie. */
async function laterOnServer(): Promise<void> {
  await untilRedisPasses(redis, await redisNow(redis), "Redis' clock to move on");
}
interface Queued {
  raw: string;
  waitId: string;
  clientId: string;
  leaseMs: number;
  eligibleMs: number;
  owner: string;
  /** First ask, server microseconds. */
  score: number;
}
/** The waits queued on a lock, oldest first (entries JSON [waitId, clientId, leaseMs, eligibleMs, owner]). */
async function queued(name: string): Promise<Queued[]> {
  const flat = await redis.zrange(lockKeys(name).queue, 0, -1, 'WITHSCORES');
  const out: Queued[] = [];
  for (let i = 0; i + 1 < flat.length; i += 2) {
    const raw = flat[i] as string;
    let e: unknown[] = [];
    try {
      e = JSON.parse(raw);
    } catch {
      // not an entry of ours (a test's ghost)
    }
    const [waitId, clientId, leaseMs, eligibleMs, owner] = e as [string, string, number, number, string];
    out.push({
      raw,
      waitId: waitId ?? raw,
      clientId,
      leaseMs,
      eligibleMs,
      owner,
      score: Number(flat[i + 1]),
    });
  }
  return out;
}
async function queuedWaits(name: string): Promise<string[]> {
  return (await queued(name)).map((e) => e.waitId);
}
/** Waits until Redis' clock is past a queued wait's eligibility (its first ask + eligibleMs). */
async function pastEligibility(name: string, waitId: string): Promise<void> {
  const e = (await queued(name)).find((q) => q.waitId === waitId);
  assert.ok(e, `${waitId} queued`);
  await untilRedisPasses(redis, Math.floor(e.score / 1000) + e.eligibleMs, `${waitId} past its eligibility`);
}
async function record(...channels: string[]): Promise<Recorder> {
  const r = await Recorder.on(server, channels);
  recorders.push(r);
  return r;
}
/** A `{0, pttl}` reply: held by one of ours, which will hand off. Returns the PTTL. */
function heldByOurs(reply: unknown, maxPttl: number): number {
  assert.ok(Array.isArray(reply) && reply.length === 2, `expected {0, pttl}, got ${JSON.stringify(reply)}`);
  const [zero, pttl] = reply as [number, number];
  assert.equal(zero, 0, 'first element 0: not a token (tokens start at 1)');
  assert.ok(pttl > 0 && pttl <= maxPttl, `pttl ${pttl}`);
  assert.deepEqual(parseAcquireReply(reply), { acquired: false, pttl, handOffExpected: true });
  return pttl;
}
/** A bare integer reply: the holder's PTTL (Redisson's contract; the holder is not one of ours). */
function bareTtl(reply: unknown, maxPttl: number): number {
  assert.equal(typeof reply, 'number', `expected a bare PTTL, got ${JSON.stringify(reply)}`);
  const pttl = reply as number;
  assert.ok(pttl > 0 && pttl <= maxPttl, `pttl ${pttl}`);
  assert.deepEqual(parseAcquireReply(reply), { acquired: false, pttl, handOffExpected: false });
  return pttl;
}
async function pttlWithin(key: string, min: number, max: number): Promise<void> {
  const pttl = await redis.pttl(key);
  assert.ok(pttl > min && pttl <= max, `${key} pttl ${pttl} not in (${min}, ${max}]`);
}

describe('acquire.lua', () => {
  it('free lock: {token, 1}, PEXPIRE set to the lease, token counter incremented, "ours" flag set for the lease', async () => {
    const name = 'a:free';
    const k = lockKeys(name);
    assert.equal(k.ours, 'flashsale_lock__ours:{a:free}');
    assert.deepEqual(await acquire({ name, owner: 'o1', leaseMs: 4000 }), [1, 1]);
    assert.deepEqual(await redis.hgetall(name), { o1: '1' });
    await pttlWithin(name, 3500, 4000);
    assert.equal(await redis.get(k.ours), '1');
    await pttlWithin(k.ours, 3500, 4000);
    assert.equal(await token(name), 1);
    assert.equal(await redis.pttl(k.token), -1, 'the fencing counter has no TTL');
    assert.equal(await redis.exists(k.queue), 0, 'no queue');
    // A fresh acquire after the lock is gone continues the counter.
    await redis.del(name, k.ours);
    assert.deepEqual(await acquire({ name, owner: 'o2', leaseMs: 2000 }), [2, 1]);
    assert.equal(await token(name), 2);
    await pttlWithin(k.ours, 1500, 2000);
  });

  it('re-entry: count 2, a new token, the lease reset on the lock and on the flag', async () => {
    const name = 'a:reentry';
    const k = lockKeys(name);
    assert.deepEqual(await acquire({ name, owner: 'o1', leaseMs: 1000 }), [1, 1]);
    assert.deepEqual(await acquire({ name, owner: 'o1', leaseMs: 9000 }), [2, 2]);
    assert.deepEqual(await redis.hgetall(name), { o1: '2' });
    await pttlWithin(name, 8000, 9000);
    await pttlWithin(k.ours, 8000, 9000);
  });

  it("held by one of ours in 'try' mode: {0, pttl}, nothing queued, nothing changed", async () => {
    const name = 'a:try';
    const k = lockKeys(name);
    await acquire({ name, owner: 'holder', leaseMs: 3000 });
    const reply = await acquire({ name, owner: 'other', leaseMs: 60_000, mode: 'try', eligibleMs: 10_000 });
    assert.ok(heldByOurs(reply, 3000) > 2500, 'the holder’s PTTL');
    assert.deepEqual(await redis.hgetall(name), { holder: '1' });
    assert.ok((await redis.pttl(name)) <= 3000, 'the holder’s lease is not touched');
    assert.ok((await redis.pttl(k.ours)) <= 3000, 'nor the flag’s');
    assert.equal(await redis.exists(k.queue), 0, 'not queued');
    assert.equal(await token(name), 1, 'no token spent on a refusal');
  });

  it("held by a foreign (Redisson) holder: the bare PTTL in 'try' and 'wait' modes (Redisson’s contract), no flag", async () => {
    const name = 'a:foreign';
    const k = lockKeys(name);
    assert.equal(await foreignHold(name, 'java-uuid:1', 3000), null);
    const tried = bareTtl(await acquire({ name, owner: 'other', mode: 'try' }), 3000);
    assert.ok(tried > 2500);
    bareTtl(await wait({ name, owner: 'w1', waitId: 'w1:a' }), 3000);
    assert.deepEqual(await queuedWaits(name), ['w1:a'], 'the waiter is queued all the same');
    bareTtl(await acquire({ name, owner: 'w1', mode: 'retry', waitId: 'w1:a', eligibleMs: 10_000 }), 3000);
    assert.equal(await redis.exists(k.ours), 0, 'a foreign hold never sets the flag');
    assert.deepEqual(await redis.hgetall(name), { 'java-uuid:1': '1' });
    assert.equal(await token(name), 0, 'no token spent');
  });

  it("held in 'wait' mode: {0, pttl}, and the wait queued (entry JSON [waitId, clientId, lease, eligibleMs, owner], score its first ask) with a TTL", async () => {
    const name = 'a:wait';
    const k = lockKeys(name);
    await acquire({ name, owner: 'holder', leaseMs: 3000 });
    const t0 = await redisNow(redis);
    const reply = await wait({ name, owner: 'w1', waitId: 'cw1:w17', clientId: 'cw1', leaseMs: 7000 });
    const t1 = await redisNow(redis);
    heldByOurs(reply, 3000);
    assert.deepEqual(await redis.hgetall(name), { holder: '1' });

    assert.deepEqual(await redis.zrange(k.queue, 0, -1), ['["cw1:w17","cw1",7000,10000,"w1"]']);
    const [entry] = await queued(name);
    assert.ok(entry);
    assert.ok(
      entry.score >= t0 * 1000 && entry.score <= (t1 + 1) * 1000,
      'queued at server time in microseconds',
    );

    // The queue expires on its own a minute after the last ask (live waiters ask within seconds).
    await pttlWithin(k.queue, 7000 + 59_000, 7000 + 60_000);
    await wait({ name, owner: 'w2', waitId: 'cw2:w1', leaseMs: 1000, eligibleMs: 0 });
    await pttlWithin(k.queue, 1000 + 59_000, 1000 + 60_000);
    assert.deepEqual(await queuedWaits(name), ['cw1:w17', 'cw2:w1']);
    assert.equal(await token(name), 1, 'waiting spends no token');
    assert.equal(await redis.get(k.ours), '1', 'the note names no wait: nothing was handed');
  });

  it('two waits of one owner are two queue entries, each with its own info', async () => {
    const name = 'a:two-waits';
    await acquire({ name, owner: 'holder', leaseMs: 10_000 });
    heldByOurs(await wait({ name, owner: 'job', waitId: 'cA:w1', clientId: 'cA', eligibleMs: 5000 }), 10_000);
    await laterOnServer();
    heldByOurs(await wait({ name, owner: 'job', waitId: 'cB:w1', clientId: 'cB', eligibleMs: 5000 }), 10_000);
    assert.deepEqual(
      (await queued(name)).map(({ waitId, clientId, eligibleMs, owner }) => [
        waitId,
        clientId,
        eligibleMs,
        owner,
      ]),
      [
        ['cA:w1', 'cA', 5000, 'job'],
        ['cB:w1', 'cB', 5000, 'job'],
      ],
    );
  });

  it("a 'retry' keeps the wait’s place (same score) and replaces its entry with a later eligibility", async () => {
    const name = 'a:retry-place';
    const k = lockKeys(name);
    await acquire({ name, owner: 'holder', leaseMs: 10_000 });
    await wait({ name, owner: 'w1', waitId: 'w1:a', clientId: 'cw1', eligibleMs: 1000 });
    await laterOnServer();
    await wait({ name, owner: 'w2', waitId: 'w2:a', clientId: 'cw2', eligibleMs: 1000 });
    const [first] = await queued(name);
    assert.equal(first?.waitId, 'w1:a');
    await laterOnServer();
    const reply = await acquire({
      name,
      owner: 'w1',
      waitId: 'w1:a',
      clientId: 'cw1',
      mode: 'retry',
      eligibleMs: 20_000,
      queuedEligibleMs: 1000,
    });
    heldByOurs(reply, 10_000);
    const after = await queued(name);
    assert.deepEqual(
      after.map((e) => e.waitId),
      ['w1:a', 'w2:a'],
      'still ahead of w2',
    );
    assert.equal(after[0]?.score, first?.score, 'same score after the retry');
    assert.equal(after[0]?.eligibleMs, 20_000, 'eligibility (from the first ask) renewed by the retry');
    assert.equal(await redis.zcard(k.queue), 2, 'the old entry is gone');
  });

  it("'retry' after a hand-off collects its own marker: the handed token and hold count, nothing incremented", async () => {
    const name = 'a:retry-handed';
    const k = lockKeys(name);
    await acquire({ name, owner: 'holder' });
    await wait({ name, owner: 'w1', waitId: 'w1:a', leaseMs: 4000 });
    assert.equal(await release(name, 'holder'), 1);
    assert.deepEqual(await redis.hgetall(name), { w1: '1' }, 'handed to w1');
    const handed = await token(name);
    assert.equal(handed, 2);
    assert.equal(await redis.get(k.ours), `w1:a|${handed}`, 'the note names the wait and its token');

    // Move the counter on by hand: the retry must answer the token in its own marker, not the
    // counter's current value.
    await redis.incr(k.token);
    assert.deepEqual(
      await acquire({ name, owner: 'w1', waitId: 'w1:a', mode: 'retry', eligibleMs: 10_000 }),
      [handed, 1],
    );
    assert.deepEqual(await redis.hgetall(name), { w1: '1' }, 'count not incremented');
    assert.equal(await token(name), handed + 1, 'no new token');
    assert.equal(await redis.get(k.ours), `w1:a|${handed}`, 'the note stays with the hold (no write)');
    assert.equal(await redis.zcard(k.queue), 0);
  });

  it("'retry' that finds the lock free takes it and leaves the queue", async () => {
    const name = 'a:retry-free';
    const k = lockKeys(name);
    await acquire({ name, owner: 'holder', leaseMs: 50 });
    await wait({ name, owner: 'w1', waitId: 'w1:a', leaseMs: 3000 });
    await wait({ name, owner: 'w2', waitId: 'w2:a' });
    // The holder's lease lapses; no release, so no hand-off.
    await until('the holder’s lease lapsed', async () => (await redis.exists(name)) === 0);
    assert.equal(await redis.exists(name, k.ours), 0, 'lock and flag lapsed together');
    assert.deepEqual(
      await acquire({ name, owner: 'w1', waitId: 'w1:a', leaseMs: 3000, mode: 'retry', eligibleMs: 10_000 }),
      [2, 1],
    );
    assert.deepEqual(
      await queuedWaits(name),
      ['w2:a'],
      'w1 left the queue, the other waiter keeps its place',
    );
    await pttlWithin(k.ours, 2500, 3000);
  });

  it('regression: two waits of one owner — the handed one collects its marker, the other re-enters (count 2); the lock outlives the first release', async () => {
    const name = 'a:same-owner';
    const k = lockKeys(name);
    await acquire({ name, owner: 'holder' });
    await wait({ name, owner: 'job', waitId: 'cA:w1', clientId: 'cA' });
    await laterOnServer();
    await wait({ name, owner: 'job', waitId: 'cB:w1', clientId: 'cB' });
    const rec = await record(wake('cA'), wake('cB'));

    assert.equal(await release(name, 'holder'), 1);
    assert.deepEqual(await redis.hgetall(name), { job: '1' }, 'handed to the oldest wait, cA:w1');
    const handed = await token(name);
    assert.equal(await rec.next(wake('cA')), JSON.stringify([name, 'cA:w1', handed]));
    assert.equal(await redis.get(k.ours), `cA:w1|${handed}`);

    // Wait B asks again and finds its owner holding: it was not handed anything, so this is a re-entry.
    const b = await acquire({
      name,
      owner: 'job',
      waitId: 'cB:w1',
      clientId: 'cB',
      mode: 'retry',
      eligibleMs: 10_000,
    });
    assert.deepEqual(b, [handed + 1, 2], 'counted: a new token and count 2');
    assert.deepEqual(await redis.hgetall(name), { job: '2' });
    assert.equal(await redis.zcard(k.queue), 0, 'wait B left the queue');
    assert.equal(await redis.get(k.ours), `cA:w1|${handed}`, 'the note still names A');

    // Wait A missed its wake message: its retry collects its own marker and does not count again.
    const a = await acquire({
      name,
      owner: 'job',
      waitId: 'cA:w1',
      clientId: 'cA',
      mode: 'retry',
      eligibleMs: 10_000,
    });
    assert.deepEqual(a, [handed, 2], 'the handed token; the owner’s count is 2');
    assert.deepEqual(await redis.hgetall(name), { job: '2' }, 'not incremented');

    // One of them leaves: the lock must stay held for the other.
    assert.equal(await release(name, 'job'), 0);
    assert.deepEqual(await redis.hgetall(name), { job: '1' });
    heldByOurs(await acquire({ name, owner: 'third' }), 5000);
    assert.equal(await release(name, 'job'), 1);
    assert.equal(await redis.exists(name, k.ours), 0);
    assert.deepEqual(await acquire({ name, owner: 'third' }), [handed + 2, 1]);
    await rec.flush();
    assert.deepEqual(rec.on(wake('cB')), [], 'wait B was never told of a hand-off');
  });
});

describe('acquire.lua pipelined with its release (a re-sent runGuarded pipeline)', () => {
  it('acquires as usual while the paired release has not run', async () => {
    const reply = await acquire({ name: 'pair:a', owner: 'o1', pairedRelease: 'rel-a' });
    assert.equal(parseAcquireReply(reply).acquired, true);
  });

  it('once the paired release ran, a re-sent acquire answers "not acquired" and takes nothing', async () => {
    const name = 'pair:b';
    assert.equal(
      parseAcquireReply(await acquire({ name, owner: 'o1', pairedRelease: 'rel-b' })).acquired,
      true,
    );
    assert.equal(await release(name, 'o1', { requestId: 'rel-b' }), 1);
    const before = await token(name);
    const replay = await acquire({
      name,
      owner: 'o1',
      mode: 'wait',
      eligibleMs: 5000,
      pairedRelease: 'rel-b',
    });
    assert.equal(parseAcquireReply(replay).acquired, false);
    assert.equal(await redis.exists(name), 0, 'the lock stays free');
    assert.equal(await token(name), before, 'no token handed out');
    assert.equal(await redis.zcard(lockKeys(name).queue), 0, 'not queued');
    // The re-sent release is answered from its latch; a new acquire (no pairing) works as ever.
    assert.equal(await release(name, 'o1', { requestId: 'rel-b' }), 1);
    assert.equal(parseAcquireReply(await acquire({ name, owner: 'o2' })).acquired, true);
  });
});

describe('release.lua', () => {
  it('a non-owner gets nil and the lock is untouched', async () => {
    const name = 'r:not-owner';
    const k = lockKeys(name);
    await acquire({ name, owner: 'o1', leaseMs: 3000 });
    const rec = await record(k.channel);
    assert.equal(await release(name, 'intruder', { leaseMs: 60_000 }), null);
    assert.deepEqual(await redis.hgetall(name), { o1: '1' });
    assert.ok((await redis.pttl(name)) <= 3000, 'lease not reset by the refused release');
    assert.equal(await redis.exists(k.ours), 1, 'the flag stays');
    assert.equal(await release('r:no-such-lock', 'o1'), null, 'a missing lock is not held either');
    assert.deepEqual(await rec.flush(), [], 'nothing published');
  });

  it('counting down: 0 while holds remain, and the lease reset to ARGV[2]', async () => {
    const name = 'r:count';
    const k = lockKeys(name);
    await acquire({ name, owner: 'o1', leaseMs: 2000 });
    await acquire({ name, owner: 'o1', leaseMs: 2000 });
    const rec = await record(k.channel);
    assert.equal(await release(name, 'o1', { leaseMs: 30_000 }), 0);
    assert.deepEqual(await redis.hgetall(name), { o1: '1' });
    assert.ok((await redis.pttl(name)) > 25_000, 'PEXPIRE reset');
    assert.equal(await redis.exists(k.ours), 1, 'still ours');
    assert.deepEqual(await rec.flush(), [], 'no unlock message while a hold remains');
  });

  it('at zero with an empty queue: DEL (lock and flag) and PUBLISH "0" on redisson_lock__channel:{name}', async () => {
    const name = 'r:free';
    const k = lockKeys(name);
    assert.equal(k.channel, 'redisson_lock__channel:{r:free}');
    await acquire({ name, owner: 'o1' });
    const rec = await record('redisson_lock__channel:{r:free}');
    const before = await token(name);
    assert.equal(await release(name, 'o1'), 1);
    assert.equal(await redis.exists(name), 0);
    assert.equal(await redis.exists(k.ours), 0, 'the flag goes with the lock');
    assert.equal(await rec.next('redisson_lock__channel:{r:free}'), '0');
    assert.equal(await token(name), before, 'the counter is not reset by a release');
    assert.equal(await redis.pttl(k.token), -1);
    // Free now: a waiter gets the lock, and a foreign acquire after a release gets a bare PTTL again.
    assert.equal(await foreignHold(name, 'java:1', 2000), null);
    bareTtl(await acquire({ name, owner: 'o2' }), 2000);
  });

  it('with queued waits: hand-off to the oldest (owner from its info), its lease, a new token and a marker; told on its wake channel only', async () => {
    const name = 'r:handoff';
    const k = lockKeys(name);
    await acquire({ name, owner: 'holder', leaseMs: 3000 });
    await wait({ name, owner: 'o1', waitId: 'cw1:w5', clientId: 'cw1', leaseMs: 7777 });
    await laterOnServer();
    await wait({ name, owner: 'o2', waitId: 'cw2:w9', clientId: 'cw2', leaseMs: 8888 });
    const rec = await record(k.channel, wake('cw1'), wake('cw2'));
    const before = await token(name);

    assert.equal(await release(name, 'holder'), 1);
    assert.deepEqual(
      await redis.hgetall(name),
      { o1: '1' },
      'o1 (the first wait’s owner) holds it with count 1',
    );
    await pttlWithin(name, 7000, 7777);
    assert.equal(await redis.get(k.ours), `cw1:w5|${before + 1}`, 'the note names the wait and token');
    await pttlWithin(k.ours, 7000, 7777);
    assert.equal(await token(name), before + 1, 'token incremented');
    assert.equal(await rec.next(wake('cw1')), JSON.stringify([name, 'cw1:w5', before + 1]));
    assert.deepEqual(JSON.parse(rec.on(wake('cw1'))[0] ?? ''), [name, 'cw1:w5', before + 1]);
    await rec.flush();
    assert.deepEqual(rec.on(k.channel), [], 'no message on the Redisson channel');
    assert.deepEqual(rec.on(wake('cw2')), [], 'the other waiter is not told');
    assert.deepEqual(await queuedWaits(name), ['cw2:w9']);

    // A later acquire by anyone else: {0, pttl} (still ours after the hand-off).
    heldByOurs(await acquire({ name, owner: 'third' }), 7777);
  });

  it('a normal release of a handed hold deletes its note with the lock; the next hand-off writes its own', async () => {
    const name = 'r:handed-release';
    const k = lockKeys(name);
    await acquire({ name, owner: 'holder' });
    await wait({ name, owner: 'o1', waitId: 'c1:w1' });
    await wait({ name, owner: 'o2', waitId: 'c2:w1' });
    assert.equal(await release(name, 'holder'), 1);
    assert.equal(await redis.get(k.ours), 'c1:w1|2');
    assert.equal(await release(name, 'o1'), 1, 'released, and handed on to o2');
    assert.deepEqual(await redis.hgetall(name), { o2: '1' });
    assert.equal(await redis.get(k.ours), 'c2:w1|3', 'o1’s note replaced by o2’s');
    assert.equal(await release(name, 'o2'), 1);
    assert.equal(await redis.exists(name, k.ours), 0, 'nothing left behind');
  });

  it('regression: a release by an owner that does not hold the lock leaves the hand-off note (checked before any write)', async () => {
    const name = 'r:handed-intruder';
    const k = lockKeys(name);
    await acquire({ name, owner: 'holder' });
    await wait({ name, owner: 'o1', waitId: 'c1:w1' });
    assert.equal(await release(name, 'holder'), 1, 'handed to o1');
    const handed = await token(name);
    assert.equal(await release(name, 'intruder'), null, 'not held by the intruder');
    assert.equal(await redis.get(k.ours), `c1:w1|${handed}`, 'o1’s note kept');
    assert.deepEqual(await redis.hgetall(name), { o1: '1' });
    // o1 missed its wake message: its retry still collects the hand-off (count 1), not a re-entry.
    assert.deepEqual(await acquire({ name, owner: 'o1', mode: 'retry', waitId: 'c1:w1' }), [handed, 1]);
    assert.equal(await release(name, 'o1'), 1);
    assert.equal(await redis.exists(name, k.ours), 0, 'nothing left behind');
  });

  it('waits past their eligibility (and entries that are not waits) are skipped and removed', async () => {
    const name = 'r:skip';
    const k = lockKeys(name);
    await acquire({ name, owner: 'holder' });
    await redis.zadd(k.queue, 0, 'ghost'); // oldest of all, but not an entry of ours
    await wait({ name, owner: 'stale', waitId: 'cstale:w1', clientId: 'cstale', eligibleMs: 1 });
    await pastEligibility(name, 'cstale:w1');
    await wait({ name, owner: 'live', waitId: 'clive:w1', clientId: 'clive', leaseMs: 6000 });
    const rec = await record(k.channel, wake('cstale'), wake('clive'));
    assert.deepEqual(await queuedWaits(name), ['ghost', 'cstale:w1', 'clive:w1']);

    assert.equal(await release(name, 'holder'), 1);
    assert.deepEqual(await redis.hgetall(name), { live: '1' });
    assert.equal(await redis.zcard(k.queue), 0, 'ghost and stale popped');
    assert.equal(await redis.get(k.ours), 'clive:w1|2', 'handed to the live wait only');
    assert.equal(await rec.next(wake('clive')), JSON.stringify([name, 'clive:w1', 2]));
    await rec.flush();
    assert.deepEqual(rec.on(wake('cstale')), []);
    assert.deepEqual(rec.on(k.channel), []);

    // Only ineligible waiters left: the lock is deleted and Redisson's "0" published instead.
    await wait({ name, owner: 'stale2', waitId: 'cstale:w2', clientId: 'cstale', eligibleMs: 1 });
    await pastEligibility(name, 'cstale:w2');
    assert.equal(await release(name, 'live'), 1);
    assert.equal(await redis.exists(name, k.ours), 0);
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

  it("'cancel' by a wait that was not handed anything: nil, the wait leaves the queue, the holder’s lock stays", async () => {
    const name = 'r:cancel';
    await acquire({ name, owner: 'holder' });
    await wait({ name, owner: 'w1', waitId: 'w1:a' });
    await wait({ name, owner: 'w2', waitId: 'w2:a' });
    assert.equal(await release(name, 'w1', { mode: 'cancel', waitId: 'w1:a' }), null, 'w1 held nothing');
    assert.deepEqual(await queuedWaits(name), ['w2:a']);
    assert.deepEqual(await redis.hgetall(name), { holder: '1' });
    assert.equal(await release(name, 'holder'), 1);
    assert.deepEqual(await redis.hgetall(name), { w2: '1' }, 'the cancelled waiter is not handed the lock');
  });

  it("'cancel' by a wait the lock was handed to meanwhile passes it on to the next wait", async () => {
    const name = 'r:cancel-handed';
    const k = lockKeys(name);
    await acquire({ name, owner: 'holder' });
    await wait({ name, owner: 'w1', waitId: 'cw1:w1', clientId: 'cw1' });
    await laterOnServer();
    await wait({ name, owner: 'w2', waitId: 'cw2:w1', clientId: 'cw2', leaseMs: 4444 });
    const rec = await record(k.channel, wake('cw1'), wake('cw2'));
    assert.equal(await release(name, 'holder'), 1);
    assert.deepEqual(await redis.hgetall(name), { w1: '1' });
    assert.equal(await rec.next(wake('cw1')), JSON.stringify([name, 'cw1:w1', 2]));

    assert.equal(await release(name, 'w1', { mode: 'cancel', waitId: 'cw1:w1' }), 1);
    assert.deepEqual(await redis.hgetall(name), { w2: '1' }, 'passed on to w2');
    assert.ok((await redis.pttl(name)) > 4000, 'with w2’s lease');
    assert.equal(await rec.next(wake('cw2')), JSON.stringify([name, 'cw2:w1', 3]));
    assert.equal(await redis.get(k.ours), 'cw2:w1|3', 'the note now names w2’s wait');
    await rec.flush();
    assert.deepEqual(rec.on(k.channel), []);

    // Cancelled again with nobody left: deleted and "0" published.
    assert.equal(await release(name, 'w2', { mode: 'cancel', waitId: 'cw2:w1' }), 1);
    assert.equal(await redis.exists(name, k.ours), 0);
    assert.equal(await rec.next(k.channel), '0');
    // A second cancel of the same wait (its note gone) gives nothing back.
    await acquire({ name, owner: 'w2' });
    assert.equal(await release(name, 'w2', { mode: 'cancel', waitId: 'cw2:w1' }), null);
    assert.deepEqual(await redis.hgetall(name), { w2: '1' }, 'the owner’s new hold is untouched');
  });

  it("regression: 'cancel' by a wait that was not handed the lock leaves the same owner’s other (handed) hold untouched", async () => {
    const name = 'r:cancel-same-owner';
    const k = lockKeys(name);
    await acquire({ name, owner: 'holder' });
    await wait({ name, owner: 'job', waitId: 'cA:w1', clientId: 'cA' });
    await laterOnServer();
    await wait({ name, owner: 'job', waitId: 'cB:w1', clientId: 'cB' });
    assert.equal(await release(name, 'holder'), 1);
    assert.deepEqual(await redis.hgetall(name), { job: '1' }, 'handed to wait A');
    const rec = await record(k.channel);

    // Wait B times out and withdraws: it was handed nothing, so nothing is given back.
    assert.equal(await release(name, 'job', { mode: 'cancel', waitId: 'cB:w1' }), null);
    assert.deepEqual(await redis.hgetall(name), { job: '1' }, 'A’s hold still counted');
    assert.equal(await redis.exists(k.ours), 1);
    assert.equal(await redis.get(k.ours), 'cA:w1|2', 'the note still names A');
    assert.equal(await redis.zcard(k.queue), 0, 'B left the queue');
    heldByOurs(await acquire({ name, owner: 'third' }), 5000);
    await rec.flush();
    assert.deepEqual(rec.on(k.channel), [], 'no unlock published');

    // A releases normally: now it is free.
    assert.equal(await release(name, 'job'), 1);
    assert.equal(await redis.exists(name, k.ours), 0);
  });

  it("'force' deletes any holder (whatever its count) and hands off or publishes; nil on a free lock", async () => {
    const name = 'r:force';
    const k = lockKeys(name);
    const rec = await record(k.channel, wake('cw1'));
    assert.equal(await release(name, '', { mode: 'force' }), null, 'nothing to force');
    await acquire({ name, owner: 'holder' });
    await acquire({ name, owner: 'holder' });
    await acquire({ name, owner: 'holder' });
    await wait({ name, owner: 'w1', waitId: 'cw1:w1', clientId: 'cw1', leaseMs: 6000 });
    assert.equal(await token(name), 3);

    assert.equal(await release(name, '', { mode: 'force' }), 1);
    assert.deepEqual(await redis.hgetall(name), { w1: '1' }, 'count 3 ignored; handed to w1');
    assert.equal(await token(name), 4);
    assert.equal(await rec.next(wake('cw1')), JSON.stringify([name, 'cw1:w1', 4]));
    await pttlWithin(k.ours, 5000, 6000);
    await rec.flush();
    assert.deepEqual(rec.on(k.channel), []);

    assert.equal(await release(name, '', { mode: 'force' }), 1);
    assert.equal(await redis.exists(name, k.ours), 0);
    assert.equal(await rec.next(k.channel), '0');
    assert.equal(await token(name), 4, 'force does not reset the counter');
    assert.equal(await redis.pttl(k.token), -1);
    assert.deepEqual(await acquire({ name, owner: 'next' }), [5, 1], 'the next acquire continues it');
    assert.equal(await release(name, 'holder'), null, 'the forced-out holder no longer holds anything');
  });

  it("regression: 'force' is latched — the same request id again is answered from the latch and does not evict the new holder", async () => {
    const name = 'r:force-latch';
    const k = lockKeys(name);
    const rec = await record(k.channel);
    await acquire({ name, owner: 'old' });
    await acquire({ name, owner: 'old' });
    assert.equal(await release(name, '', { mode: 'force', requestId: 'force-1' }), 1);
    assert.equal(await redis.exists(name), 0);
    await pttlWithin(k.latch('force-1'), 0, 10_000);
    assert.equal(await rec.next(k.channel), '0');

    assert.deepEqual(await acquire({ name, owner: 'new', leaseMs: 8000 }), [3, 1]);
    assert.equal(await release(name, '', { mode: 'force', requestId: 'force-1' }), 1, 'the latched result');
    assert.deepEqual(await redis.hgetall(name), { new: '1' }, 'the new holder is not evicted');
    assert.equal(await redis.exists(k.ours), 1);
    await rec.flush();
    assert.deepEqual(rec.on(k.channel), ['0'], 'published once');
    // A fresh request id does force it.
    assert.equal(await release(name, '', { mode: 'force', requestId: 'force-2' }), 1);
    assert.equal(await redis.exists(name), 0);
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
    await wait({ name, owner: 'b' });
    await release(name, 'a');
    await release(name, 'a'); // hand-off to b
    seen.push(await token(name));
    await release(name, '', { mode: 'force' });
    await grab('c');
    // c's lease lapses: the lock key is gone, the counter is not.
    await until('c’s lease lapsed', async () => (await redis.exists(name)) === 0);
    assert.equal(await redis.pttl(k.token), -1);
    await grab('d');
    assert.deepEqual(seen, [1, 2, 3, 4, 5]);
  });
});

describe('every release script checks the owner before it writes', () => {
  /** Every key of lock `name` with its value (DUMP) and TTL. */
  async function state(name: string): Promise<Record<string, unknown>> {
    const keys = (await redis.keys(`*${name}*`)).sort();
    const out: Record<string, unknown> = {};
    for (const key of keys) {
      out[key] = [await redis.dumpBuffer(key), (await redis.pttl(key)) > 0];
    }
    return out;
  }
  const queued = (name: string, owner: string, mode: 'try' | 'wait'): QueuedAcquire => ({
    name,
    owner,
    leaseMs: 60_000,
    mode,
    clientId: `c-${owner}`,
    eligibleMs: 10_000,
    heartbeatMs: 5_000,
  });
  const kinds = {
    fair: {
      acquire: (name: string, owner: string, mode: 'try' | 'wait') =>
        raw(fairAcquireScript, fairAcquireInput(queued(name, owner, mode))),
      release: (name: string, owner: string) =>
        raw(
          fairReleaseScript,
          fairReleaseInput({ name, owner, leaseMs: 60_000, mode: 'release', requestId: 'x' }),
        ),
    },
    rw: {
      acquire: (name: string, owner: string, mode: 'try' | 'wait') =>
        raw(rwAcquireScript, rwAcquireInput({ ...queued(name, owner, mode), kind: 'w' })),
      release: (name: string, owner: string) =>
        raw(rwReleaseScript, rwReleaseInput({ name, owner, kind: 'w', mode: 'release', requestId: 'x' })),
    },
    redlock: {
      acquire: (name: string, owner: string, mode: 'try' | 'wait') =>
        raw(redlockAcquireScript, redlockAcquireInput(queued(name, owner, mode))),
      release: (name: string, owner: string) =>
        raw(
          redlockReleaseScript,
          redlockReleaseInput({
            name,
            owner,
            leaseMs: 60_000,
            mode: 'release',
            requestId: 'x',
            reservationMs: 100,
          }),
        ),
    },
  };
  for (const [kind, k] of Object.entries(kinds)) {
    it(`${kind}: a release by a non-owner answers nil and leaves every key of the lock as it was`, async () => {
      const name = `owner-first:${kind}`;
      await k.acquire(name, 'holder', 'try');
      await k.acquire(name, 'waiter', 'wait');
      const before = await state(name);
      assert.equal(await k.release(name, 'intruder'), null);
      assert.deepEqual(await state(name), before);
    });
  }
});

describe('sibling scripts take their arguments in one order', () => {
  const families = {
    acquire: [acquireScript, fairAcquireScript, rwAcquireScript, redlockAcquireScript],
    release: [releaseScript, fairReleaseScript, rwReleaseScript, redlockReleaseScript],
    renew: [renewScript, rwRenewScript],
  };
  for (const [family, scripts] of Object.entries(families)) {
    it(`${family}: an argument two scripts share has one ARGV position; shared keys come in one order`, () => {
      for (const a of scripts) {
        for (const b of scripts) {
          for (const [i, arg] of a.args.entries()) {
            const j = (b.args as readonly string[]).indexOf(arg);
            assert.ok(
              j === -1 || j === i,
              `${arg}: ARGV[${i + 1}] in ${a.name}, ARGV[${j + 1}] in ${b.name}`,
            );
          }
          const shared = (x: readonly string[], y: readonly string[]) => x.filter((k) => y.includes(k));
          assert.deepEqual(shared(a.keys, b.keys), shared(b.keys, a.keys), `${a.name} / ${b.name} keys`);
        }
      }
    });
  }
});
