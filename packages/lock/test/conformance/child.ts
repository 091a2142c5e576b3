// A child process of the conformance suite, using one lock kind (argv: mode, KindConfig as JSON, lock
// name, then the mode's own): `exclusion` counts in Redis under the lock and checks overlap and fencing;
// `hold` takes the lock and keeps it until killed; `close` uses the lock, closes it, and must then exit.
import { setImmediate as yieldOnce } from 'node:timers/promises';
import { Redis } from 'ioredis';
import { type KindConfig, openKind } from './kinds.ts';

const [mode, configJson = '{}', name = 'lock', ...rest] = process.argv.slice(2);
const config = JSON.parse(configJson) as KindConfig;

/** Under the lock: no one else inside, a token newer than every earlier holder's, a counter bumped by read-then-write. */
async function exclusion(iterations: number, redisPort: number): Promise<void> {
  const redis = new Redis(redisPort, '127.0.0.1');
  const { locks, close } = await openKind(config);
  const keys = { inside: `${name}:inside`, fence: `${name}:fence`, counter: `${name}:counter` };
  let violations = 0;
  for (let i = 0; i < iterations; i++) {
    await locks.withLock(name, { waitMs: 120_000 }, async (hold) => {
      if ((await redis.incr(keys.inside)) !== 1) violations++;
      const fence = Number((await redis.get(keys.fence)) ?? 0);
      if (hold.token <= fence) violations++;
      await redis.set(keys.fence, hold.token);
      const count = Number((await redis.get(keys.counter)) ?? 0);
      await yieldOnce();
      await redis.set(keys.counter, count + 1);
      await redis.decr(keys.inside);
    });
  }
  await close();
  await redis.quit();
  process.stdout.write(`done ${violations}\n`);
}

async function hold(): Promise<void> {
  const { locks } = await openKind(config);
  const handle = await locks.acquire(name, { waitMs: 60_000 });
  process.stdout.write(`held ${handle.token}\n`);
  setInterval(() => {}, 60_000);
}

/** Acquires, re-enters, times out a wait, releases, closes: afterwards nothing may keep the process alive. */
async function useThenClose(): Promise<void> {
  const { locks, close } = await openKind(config);
  await locks.withLock(name, { waitMs: 10_000 }, async () => {
    await locks.withLock(name, {}, async () => {});
    await locks.tryAcquire(name, { owner: 'someone-else', waitMs: 50 });
  });
  await close();
  process.stdout.write('closed\n');
}

if (mode === 'exclusion') await exclusion(Number(rest[0]), Number(rest[1]));
else if (mode === 'hold') await hold();
else if (mode === 'close') await useThenClose();
else throw new Error(`unknown mode ${mode}`);
