// A plain-JS user of the installed package (copied into the smoke project by smoke-tarball.mjs):
// acquire, re-enter, release, fencing tokens that increase, a missing optional peer, and an exit of its own.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { EtcdLock, LockClient, PeerMissingError } from '@flashsale/lock';
import { lockKeys } from '@flashsale/lock/toolkit';
import { Redis } from 'ioredis';

const redis = new Redis(process.env.REDIS_URL ?? 'redis://127.0.0.1:6379');
const locks = new LockClient(redis);
const name = `smoke:${randomUUID()}`;

await locks.withLock(name, { waitMs: 1000 }, async (outer) => {
  await locks.withLock(name, {}, async (inner) => {
    assert.equal(inner.holdCount, 2, "re-entry in the holder's async chain");
    assert.ok(inner.token >= outer.token, 'a re-entry never goes back on the token');
  });
});
assert.equal(await locks.isLocked(name), false, 'released by withLock');

const first = await locks.acquire(name, { waitMs: 1000 });
assert.equal(await locks.tryAcquire(name), null, 'another owner is excluded');
await first.release();

const second = await locks.tryAcquire(name);
assert.ok(second, 'free again after the release');
assert.ok(second.token > first.token, `fencing token increases: ${first.token} then ${second.token}`);
await second.release();
await second.release(); // idempotent

await assert.rejects(
  EtcdLock.connect(),
  (err) => err instanceof PeerMissingError && /npm install etcd3/.test(err.message),
);

await locks.close();
await redis.del(...Object.values(lockKeys(name)).filter((k) => typeof k === 'string'));
await redis.quit();
console.log(`smoke: ok (tokens ${first.token} < ${second.token}); exiting without process.exit`);
