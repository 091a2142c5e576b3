// Waiting on a Redis lock's wait queue: a test orders its steps by how many requests (orders, admins,
// lock clients) the lock shows queued, never by a sleep.
import { lockKeys } from '@flashsale/lock/toolkit';
import { until } from '../../harness/async.ts';

/** Waits until at least `n` requests are queued on the lock `name` (e.g. orders behind a held shard lock). */
export async function queuedOn(
  redis: { zcard(key: string): Promise<number> },
  name: string,
  n: number,
): Promise<void> {
  await until(
    `${n} request(s) queued on ${name}`,
    async () => (await redis.zcard(lockKeys(name).queue)) >= n,
  );
}
