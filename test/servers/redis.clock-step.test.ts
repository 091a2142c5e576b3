// RedisClock after Redis' own clock is stepped forward (libfaketime on a private redis-server; found
// by test/partitions scenario c): an order's reservation is sent with a deadline in the server's time
// as this process estimates it, so while the estimate lags by more than that deadline's margin every
// reservation is refused as late and every order answered 429 busy. The estimate must follow the
// step within a couple of seconds (it used to take up to 10).
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { redisNow, until } from '../../harness/async.ts';
import { RedisServer } from '../../harness/redis-server.ts';
import { RedisClock } from '../../src/redis/clock.ts';
import { FakeClock } from '../support/fake-clock.ts';

describe("RedisClock when Redis' clock is stepped", () => {
  const fake = new FakeClock();
  let server: RedisServer;
  let clock: RedisClock;
  before(async () => {
    server = await RedisServer.start({ env: fake.env });
    clock = await new RedisClock(server.client()).start();
  });
  after(async () => {
    clock.stop();
    await server.stop();
  });

  it('follows a 30 s step forward within 3 s', async () => {
    const redis = server.client();
    const before = await redisNow(redis);
    fake.step(30);
    assert.ok((await redisNow(redis)) - before >= 30_000, "Redis' clock stepped");
    let gap = 0;
    // A failure bound, not a timing assertion: the old refresh (10 s) never got there within it.
    await until(
      'the estimate to follow the step',
      async () => {
        gap = (await redisNow(redis)) - clock.now();
        return Math.abs(gap) < 1000;
      },
      { timeoutMs: 3000, everyMs: 50 },
    ).catch(() => assert.fail(`the estimate still lags Redis by ${gap} ms`));
  });
});
