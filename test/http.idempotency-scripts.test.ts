// The Idempotency-Key scripts on their own: claim (one step: take the key or see its record, with the
// server's clock) and settle (acts only for the attempt that holds the claim).
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { Redis } from 'ioredis';
import { RedisServer } from '../harness/redis-server.ts';
import { IDEMPOTENCY_CLAIM, IDEMPOTENCY_SETTLE } from '../src/orders/idempotency.ts';

let server: RedisServer;
let redis: Redis;
before(async () => {
  server = await RedisServer.start();
  redis = server.client();
});
after(() => server.stop());

const settle = (key: string, attempt: string, record: string) =>
  IDEMPOTENCY_SETTLE.run(redis, { key, attempt, record });
const claim = (key: string, record: string, ttlSeconds: number) =>
  IDEMPOTENCY_CLAIM.run(redis, { key, record, ttlSeconds });

describe('idempotency-settle.lua', () => {
  it('stores the answer for the owning attempt and keeps the TTL', async () => {
    await redis.set('idem:{a}', JSON.stringify({ fingerprint: 'f', attempt: 'A' }), 'EX', 100);
    const record = JSON.stringify({ fingerprint: 'f', attempt: 'A', answer: { status: 202, body: {} } });
    assert.equal(await settle('idem:{a}', 'A', record), 1);
    assert.equal(await redis.get('idem:{a}'), record);
    assert.ok((await redis.ttl('idem:{a}')) > 90);
  });

  it('refuses another attempt: neither store nor delete', async () => {
    const claim = JSON.stringify({ fingerprint: 'f', attempt: 'B' });
    await redis.set('idem:{b}', claim, 'EX', 100);
    assert.equal(await settle('idem:{b}', 'A', '{"x":1}'), 0);
    assert.equal(await settle('idem:{b}', 'A', ''), 0);
    assert.equal(await redis.get('idem:{b}'), claim);
  });

  it('deletes the claim for the owning attempt; a missing or garbled key is left alone', async () => {
    await redis.set('idem:{c}', JSON.stringify({ fingerprint: 'f', attempt: 'C' }));
    assert.equal(await settle('idem:{c}', 'C', ''), 1);
    assert.equal(await redis.exists('idem:{c}'), 0);
    assert.equal(await settle('idem:{gone}', 'C', ''), 0);
    await redis.set('idem:{d}', 'not json');
    assert.equal(await settle('idem:{d}', 'C', ''), 0);
    assert.equal(await redis.get('idem:{d}'), 'not json');
  });
});

describe('idempotency-claim.lua', () => {
  it('claims a free key with its TTL and answers the server time', async () => {
    const [seconds] = await redis.time();
    const { claimed, raw, now } = await claim('idem:{e}', '{"attempt":"A"}', 100);
    assert.deepEqual([claimed, raw], [true, '{"attempt":"A"}']);
    assert.ok(Math.abs(now - Number(seconds) * 1000) < 2000, `server time ${now}`);
    assert.ok((await redis.ttl('idem:{e}')) > 90);
  });

  it('leaves a taken key alone and answers its record (a resent claim sees its own)', async () => {
    await redis.set('idem:{f}', '{"attempt":"A","answer":1}', 'EX', 100);
    const { claimed, raw } = await claim('idem:{f}', '{"attempt":"B"}', 100);
    assert.deepEqual([claimed, raw], [false, '{"attempt":"A","answer":1}']);
    assert.equal(await redis.get('idem:{f}'), '{"attempt":"A","answer":1}');
  });
});
