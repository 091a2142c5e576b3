// Helpers for lock tests: a lock client per connection, and a guard that fails the test on any
// unhandled rejection (the library must never leak one from a timer or a background renewal).
import type { Redis } from 'ioredis';
import { LockClient, type LockClientOptions } from '../../src/lock/index.ts';
import type { RedisServer } from './redis-server.ts';

export function lockClient(
  server: RedisServer,
  options: LockClientOptions = {},
): { client: LockClient; redis: Redis } {
  const redis = server.client();
  return { client: new LockClient(redis, options), redis };
}

const unhandled: unknown[] = [];
process.on('unhandledRejection', (reason) => unhandled.push(reason));
export function unhandledRejections(): unknown[] {
  return unhandled;
}
