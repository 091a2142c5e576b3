// Scenario b: an API process paused (SIGSTOP) while it holds a shard lock, past its lease, then
// resumed. Redis, two API processes and the writer each in a namespace; a one-shard sale under load.
// Each round: the test holds the shard lock until API A has an order queued for it, freezes A, and
// lets go; the lock passes down the queue until it is handed to A's frozen wait (seen in the lock
// hash: A's owner id holds it). Its 300 ms lease lapses, another holder decrements (the shard's
// fence passes A's token), and only then is A resumed: its decrement must be refused.

import { LockClient } from '@flashsale/lock';
import type { Redis } from 'ioredis';
import { until } from '../../harness/async.ts';
import type { Spawned } from '../../harness/service.ts';
import { type OrderLog, request, type ScenarioResult } from '../faults/lib.ts';
import { fencedTotal, finish, log, pause, redisStack, resume, saleWithLoad, scenario } from './kit.ts';

const LEASE_MS = 300;
const ROUNDS = 3;
const STOCK = 1800;
const ORDERS = 2600;

type Keys = Awaited<ReturnType<typeof saleWithLoad>>['lock'];

/** Client ids of the waits queued for the lock now (entries `[waitId, clientId, lease, eligible, owner]`). */
async function waitingClients(redis: Redis, keys: Keys): Promise<string[]> {
  return (await redis.zrange(keys.queue, 0, -1)).map((e) => JSON.parse(e)[1] as string);
}

/** The owner id holding the lock now, if any (the Redisson hash's one field). */
async function holder(redis: Redis, keys: Keys): Promise<string | undefined> {
  return (await redis.hkeys(keys.lock))[0];
}

/** What the test needs of the sale for a round: its lock's keys and its one shard. */
type Sale = Awaited<ReturnType<typeof saleWithLoad>>;

/**
 * API A's lock client id: the new waiter when an order is sent to A alone while the test holds the
 * lock. Returns it with that order's outcome, for the load's log (it may become a row).
 */
async function lockClientOf(apiA: Spawned, redis: Redis, s: Sale, testLocks: LockClient) {
  const first = await testLocks.acquire(s.lockName, { leaseMs: 10_000, waitMs: 10_000 });
  const before = new Set(await waitingClients(redis, s.lock));
  const order = { userId: 'probe', quantity: 1 };
  const probe = request(apiA.url, 'POST', '/api/orders', { productId: s.productId, ...order });
  const clientA = await until('API A to queue for the lock', async () =>
    (await waitingClients(redis, s.lock)).find((c) => !before.has(c)),
  );
  await first.release();
  const log: Promise<OrderLog> = probe.then((outcome) => ({ ...order, i: -1, attempts: [outcome] }));
  return { clientA, log };
}

/** One round: A frozen while the lock is handed to it, resumed once a later holder decremented. */
async function freezeRound(redis: Redis, s: Sale, testLocks: LockClient, apiA: Spawned, clientA: string) {
  const hold = await testLocks.acquire(s.lockName, { leaseMs: 10_000, waitMs: 10_000 });
  await until('API A to wait for the held lock', async () =>
    (await waitingClients(redis, s.lock)).some((c) => c.startsWith(clientA)),
  );
  await pause(apiA);
  await hold.release();
  // Handed down the queue to A's frozen wait: A holds the lock and cannot know it.
  const ownerA = await until(
    'the lock to be handed to frozen API A',
    async () => {
      const h = await holder(redis, s.lock);
      return h?.startsWith(clientA) ? h : undefined;
    },
    { timeoutMs: 10_000 },
  );
  const tokenA = Number(await redis.get(s.lock.token));
  // Its lease lapses; someone else takes the shard and decrements past A's token.
  await until(
    'another holder to decrement after the lapsed lease',
    async () => Number(await redis.get(`${s.sale.shardKeys[0]}:fence`)) > tokenA,
    { timeoutMs: 20_000 },
  );
  const lapsed = !(await redis.hexists(s.lock.lock, ownerA));
  resume(apiA);
  return { ownerA, tokenA, lapsed };
}

export function pauseHolder(): Promise<ScenarioResult> {
  const env = { LOCK_LEASE_MS: String(LEASE_MS), LOCK_WAIT_MS: '5000' };
  const name = 'API paused (SIGSTOP) holding a shard lock past its lease';
  return scenario('b', name, env, async (world, result) => {
    const { redis, commits, apiA, apiB, targets } = await redisStack(world);
    const testLocks = new LockClient(redis, { clientId: 'partition-test' });
    world.own({ stop: () => testLocks.close() });
    const spec = { prefix: 'pb', stock: STOCK, shards: 1, orders: ORDERS, ratePerSec: 260 };
    const s = await saleWithLoad(targets, redis, spec);
    const { clientA, log: probe } = await lockClientOf(apiA, redis, s, testLocks);
    const load = s.startLoad();
    load.logs.push(await probe);
    const rounds: Record<string, unknown>[] = [];
    for (let k = 0; k < ROUNDS; k++) {
      await load.reached(Math.floor(ORDERS * (0.1 + 0.2 * k)));
      const round = await freezeRound(redis, s, testLocks, apiA, clientA);
      rounds.push(round);
      log(
        'b',
        `round ${k + 1}: API A froze holding token ${round.tokenA}; a later holder decremented; resumed`,
      );
    }
    const fenced = await fencedTotal([apiA, apiB]);
    result.details.rounds = rounds;
    result.details.fencedDecrements = fenced;
    result.faults = `${rounds.length}× API A frozen (SIGSTOP) while holding the one shard's lock (lease ${LEASE_MS} ms), resumed after another holder decremented; ${fenced} decrements fenced`;
    await finish(result, world, { targets, redis, commits, load, productId: s.productId, total: STOCK });
  });
}
