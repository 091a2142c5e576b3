// The conformance suite against the Redis lock kinds: reentrant (LockClient), fair, the write side of
// the read-write lock, and RedLock over three masters, each on private redis-servers.
import { Redis } from 'ioredis';
import { RedisServer } from '../../../../harness/redis-server.ts';
import { REDIS_KINDS } from './kinds.ts';
import { conformanceSuite } from './suite.ts';

/** Deletes the lock's hash on every master: its holder's next renewal finds it gone. */
async function dropLockKey(ports: number[], name: string): Promise<void> {
  for (const port of ports) {
    const redis = new Redis(port, '127.0.0.1');
    await redis.del(name);
    await redis.quit();
  }
}

for (const kind of REDIS_KINDS) {
  conformanceSuite({
    kind,
    leaseMs: 4000,
    start: async () => {
      const masters = await Promise.all(
        Array.from({ length: kind === 'redlock' ? 3 : 1 }, () => RedisServer.start()),
      );
      return {
        ports: masters.map((m) => m.port),
        stop: async () => {
          await Promise.all(masters.map((m) => m.stop()));
        },
      };
    },
    breakHold: dropLockKey,
  });
}
