// Scenario c: the Redis server's clock stepped forward past a lease, with libfaketime on that one
// redis-server process (the machine's clock is never touched). Redis, two API processes and the
// writer each in a namespace; a one-shard sale under load. Each round: the test holds the shard's
// lock (lease 2 s) until orders queue behind it, then steps Redis' clock 3 s forward: every lease in
// Redis lapses at once (the test's, and the API processes' handed-off holds). The queued orders go
// on; the test, still believing it holds the lock, tries a fenced decrement with its hold: refused.

import { LockClient, type LockHandle } from '@flashsale/lock';
import type { Redis } from 'ioredis';
import { redisNow, until } from '../../harness/async.ts';
import { ShardStatus } from '../../src/inventory/replies.ts';
import { RESERVE } from '../../src/inventory/scripts.ts';
import { check, type ScenarioResult } from '../faults/lib.ts';
import { FakeClock } from '../support/fake-clock.ts';
import { fencedTotal, finish, log, redisStack, saleWithLoad, scenario } from './kit.ts';

const LEASE_MS = 2000;
const STEP_S = 3;
const ROUNDS = 3;
const STOCK = 1500;
const ORDERS = 2200;

type Sale = Awaited<ReturnType<typeof saleWithLoad>>;

/** A decrement of the shard under `hold` (the reservation script, as an API process sends it). */
async function decrementUnder(redis: Redis, s: Sale, hold: LockHandle, id: string): Promise<number> {
  const shard = s.sale.shardKeys[0] as string;
  const [status] = await RESERVE.run(redis, {
    lock: s.lock.lock,
    tokenCounter: s.lock.token,
    stock: shard,
    fence: `${shard}:fence`,
    sold: `${shard}:sold`,
    reservations: `${shard}:res`,
    owner: hold.owner,
    token: hold.token,
    quantity: 1,
    id,
    entry: JSON.stringify({ orderId: id }),
    deadline: 0,
    startsAt: 0,
    endsAt: 0,
    fenced: '',
  });
  return status as number;
}

/** One round: the test's hold, orders queued behind it, Redis' clock stepped past the lease. */
async function stepRound(redis: Redis, s: Sale, testLocks: LockClient, clock: FakeClock, k: number) {
  const hold = await testLocks.acquire(s.lockName, { leaseMs: LEASE_MS, waitMs: 10_000 });
  await until('orders to queue for the held lock', async () => (await redis.zcard(s.lock.queue)) >= 3);
  const before = await redisNow(redis);
  clock.step(STEP_S);
  const jumpedMs = (await redisNow(redis)) - before;
  // The step is real: Redis' clock moved past the lease at once, and the hold with it.
  const lapsed = !(await redis.hexists(s.lock.lock, hold.owner));
  const staleStatus = await decrementUnder(redis, s, hold, `${s.productId}.stale-${k}`);
  await hold.release().catch(() => {});
  return { jumpedMs, lapsed, staleStatus };
}

export function clockStep(): Promise<ScenarioResult> {
  const env = { LOCK_LEASE_MS: '1000', LOCK_WAIT_MS: '5000' };
  return scenario('c', "Redis' clock stepped past a lease (libfaketime)", env, async (world, result) => {
    const clock = new FakeClock();
    const { redis, commits, apiA, apiB, targets } = await redisStack(world, clock.env);
    const testLocks = new LockClient(redis, { clientId: 'partition-test' });
    world.own({ stop: () => testLocks.close() });
    const spec = { prefix: 'pc', stock: STOCK, shards: 1, orders: ORDERS, ratePerSec: 250 };
    const s = await saleWithLoad(targets, redis, spec);
    const load = s.startLoad();
    const rounds: Record<string, unknown>[] = [];
    for (let k = 0; k < ROUNDS; k++) {
      await load.reached(Math.floor(ORDERS * (0.1 + 0.22 * k)));
      const r = await stepRound(redis, s, testLocks, clock, k);
      rounds.push(r);
      const n = k + 1;
      check(result, r.jumpedMs >= STEP_S * 1000, `round ${n}: Redis' clock moved ${r.jumpedMs} ms`);
      check(result, r.lapsed, `round ${n}: the hold outlived a ${STEP_S} s step of a ${LEASE_MS} ms lease`);
      check(
        result,
        r.staleStatus === ShardStatus.notOwner || r.staleStatus === ShardStatus.staleToken,
        `round ${n}: a decrement under the lapsed hold was not refused (status ${r.staleStatus})`,
      );
      log(
        'c',
        `round ${n}: Redis' clock +${STEP_S} s (moved ${r.jumpedMs} ms), stale decrement ${r.staleStatus}`,
      );
    }
    const fenced = await fencedTotal([apiA, apiB]);
    result.details.rounds = rounds;
    result.details.fencedDecrements = fenced;
    result.faults = `${rounds.length} steps of Redis' clock +${STEP_S} s (libfaketime) while the shard's lock was held (lease ${LEASE_MS} ms) with orders queued; ${fenced} API decrements fenced`;
    await finish(result, world, { targets, redis, commits, load, productId: s.productId, total: STOCK });
  });
}
