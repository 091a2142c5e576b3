// The reentrant lock's two modes (Go sync.Mutex style), on a private redis-server: normal mode (a
// release frees the lock for whoever asks first and wakes only the oldest waiter, which keeps its place
// when it loses) and starvation mode (a waiter queued past starvationMs is handed the lock directly).
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { Redis } from 'ioredis';
import { track, until, untilRedisPasses } from '../../../harness/async.ts';
import { RedisServer } from '../../../harness/redis-server.ts';
import { Recorder } from '../../../test/support/pubsub.ts';
import { LockClient, type LockClientOptions } from '../src/index.ts';
import { lockKeys } from '../src/keys.ts';
import { parseAcquireReply } from '../src/replies.ts';
import {
  type AcquireRequest,
  acquireInput,
  acquireScript,
  DEFAULT_STARVATION_MS,
  releaseInput,
  releaseScript,
} from '../src/scripts.ts';
import { unhandledRejections } from './support/lock.ts';

let server: RedisServer;
let redis: Redis;
const closers: Array<{ close(): Promise<void> }> = [];

before(async () => {
  server = await RedisServer.start();
  redis = server.client();
});
after(async () => {
  await Promise.all(closers.map((c) => c.close()));
  await server.stop();
  assert.deepEqual(unhandledRejections(), [], 'no unhandled rejection during the barging tests');
});

const wake = (clientId: string) => `flashsale_lock__wake:${clientId}`;

function acquire(r: Pick<AcquireRequest, 'name' | 'owner' | 'mode'>) {
  const input = acquireInput({
    leaseMs: 5000,
    clientId: `c-${r.owner}`,
    eligibleMs: 10_000,
    waitId: `${r.owner}#w`,
    ...r,
  });
  return redis.eval(acquireScript.source, acquireScript.numberOfKeys, ...acquireScript.values(input));
}

function release(name: string, owner: string, starvationMs: number) {
  const input = releaseInput({
    name,
    owner,
    leaseMs: 5000,
    mode: 'release',
    requestId: `${owner}:${Math.random()}`,
    starvationMs,
  });
  return redis.eval(releaseScript.source, releaseScript.numberOfKeys, ...releaseScript.values(input));
}

async function record(...channels: string[]): Promise<Recorder> {
  const r = await Recorder.on(server, channels);
  closers.push(r);
  return r;
}

function client(options: LockClientOptions = {}): LockClient {
  const c = new LockClient(server.client(), options);
  closers.push(c);
  return c;
}

describe('release.lua, normal mode (the head has waited less than starvationMs)', () => {
  it('frees the lock, wakes only the oldest waiter (it keeps its place) and sends Redisson’s "0"', async () => {
    const name = 'b:normal';
    const k = lockKeys(name);
    await acquire({ name, owner: 'holder', mode: 'try' });
    await acquire({ name, owner: 'w1', mode: 'wait' });
    await untilRedisPasses(redis, Date.now(), 'a later first ask');
    await acquire({ name, owner: 'w2', mode: 'wait' });
    const queueBefore = await redis.zrange(k.queue, 0, -1, 'WITHSCORES');
    const rec = await record(k.channel, wake('c-w1'), wake('c-w2'));

    assert.equal(await release(name, 'holder', 600_000), 1);
    assert.equal(await redis.exists(name, k.ours), 0, 'the lock is free');
    assert.equal(await rec.next(wake('c-w1')), JSON.stringify([name, 'w1#w', 'head', 0]));
    assert.equal(await rec.next(k.channel), '0');
    await rec.flush();
    assert.deepEqual(rec.on(wake('c-w2')), [], 'nobody else woken');
    assert.deepEqual(await redis.zrange(k.queue, 0, -1, 'WITHSCORES'), queueBefore, 'queue unchanged');

    // A newcomer barges: the free lock is whoever's asks first. The woken waiter, late, keeps its place.
    assert.equal(parseAcquireReply(await acquire({ name, owner: 'barger', mode: 'try' })).acquired, true);
    assert.equal(parseAcquireReply(await acquire({ name, owner: 'w1', mode: 'retry' })).acquired, false);
    assert.deepEqual(await redis.zrange(k.queue, 0, -1, 'WITHSCORES'), queueBefore, 'w1 still first');
  });

  it('starvation mode: a head queued for starvationMs or longer is handed the lock; nobody can barge', async () => {
    const name = 'b:starved';
    const k = lockKeys(name);
    await acquire({ name, owner: 'holder', mode: 'try' });
    await acquire({ name, owner: 'w1', mode: 'wait' });
    const [, firstAskUs] = await redis.zrange(k.queue, 0, 0, 'WITHSCORES');
    await untilRedisPasses(redis, Math.ceil(Number(firstAskUs) / 1000) + 5, 'w1 queued 5 ms');
    assert.equal(await release(name, 'holder', 5), 1);
    assert.deepEqual(await redis.hgetall(name), { w1: '1' }, 'handed to w1');
    assert.equal(parseAcquireReply(await acquire({ name, owner: 'barger', mode: 'try' })).acquired, false);
    assert.equal(await redis.zcard(k.queue), 0);
  });
});

describe('LockClient barging', () => {
  it(`defaults to starvationMs ${DEFAULT_STARVATION_MS}, and refuses a bound that is not a non-negative integer`, () => {
    assert.equal(client().starvationMs, DEFAULT_STARVATION_MS);
    for (const bad of [-1, 0.5, Number.NaN]) assert.throws(() => client({ starvationMs: bad }), RangeError);
  });

  it('a waiter that gives up after being woken passes the wake-up on to the next waiter', async () => {
    const name = 'b:cancel-woken';
    const k = lockKeys(name);
    const holder = client({ starvationMs: 600_000 });
    const h = await holder.acquire(name, { leaseMs: 600_000 });
    // The first waiter's client never hears its wake-up (its subscriber is cut); it gives up by abort.
    const sub = server.client({
      lazyConnect: true,
      autoResubscribe: false,
      retryStrategy: () => null,
      connectionName: 'deaf',
    });
    const deaf = client({ subscriber: sub });
    const controller = new AbortController();
    const first = track(deaf.acquire(name, { waitMs: 600_000, leaseMs: 5000, signal: controller.signal }));
    first.promise.catch(() => {});
    await until('the first waiter queued', async () => (await redis.zcard(k.queue)) === 1);
    const next = client();
    const second = track(next.acquire(name, { waitMs: 600_000, leaseMs: 5000 }));
    await until('the second waiter queued', async () => (await redis.zcard(k.queue)) === 2);
    const id = /id=(\d+) [^\n]* name=deaf /.exec(String(await redis.client('LIST')))?.[1];
    assert.ok(id, 'the deaf subscriber is connected');
    await redis.client('KILL', 'ID', id);
    await until('the deaf subscriber gone', async () => sub.status === 'end');
    const rec = await record(wake(next.clientId));
    await h.release(); // wakes the first waiter, which does not hear it
    controller.abort(new Error('gave up'));
    await assert.rejects(first.promise);
    // Its withdrawal wakes the second waiter (else it would sleep on until its heartbeat).
    const [, , kind, ms] = JSON.parse(await rec.next(wake(next.clientId))) as unknown[];
    assert.deepEqual([kind, ms], ['head', 0]);
    const got = await second.promise;
    assert.equal(await redis.hget(name, got.owner), '1');
    await got.release();
  });
});
