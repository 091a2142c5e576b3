// Scenario c: the Redis server's clock stepped forward past a lease, with libfaketime on that one
// redis-server process (the machine's clock is never touched). Redis, two API processes and the
// writer each in a namespace; a one-shard sale under load. Each round: the test holds the shard's
// lock (lease 2 s) until orders queue behind it, then steps Redis' clock 3 s forward: every lease in
// Redis lapses at once (the test's, and the API processes' handed-off holds). The queued orders go
// on; the test, still believing it holds the lock, tries a fenced decrement with its hold: refused.
import { ShardStatus } from '../../src/inventory/replies.ts';
import { RESERVE } from '../../src/inventory/scripts.ts';
import { LockClient } from '../../src/lock/index.ts';
import { check, type ScenarioResult } from '../faults/lib.ts';
import { redisNow, until } from '../support/async.ts';
import { FakeClock } from '../support/fake-clock.ts';
import { CommitLog, fencedTotal, finish, log, redisAt, saleWithLoad, scenario, Targets } from './kit.ts';

const LEASE_MS = 2000;
const STEP_S = 3;
const ROUNDS = 3;
const STOCK = 1500;
const ORDERS = 2200;

export function clockStep(): Promise<ScenarioResult> {
  const env = { LOCK_LEASE_MS: '1000', LOCK_WAIT_MS: '5000' };
  return scenario('c', "Redis' clock stepped past a lease (libfaketime)", env, async (world, result) => {
    const net = world.net;
    const clock = new FakeClock();
    const server = await redisAt(world, net.host('redis'), clock.env);
    const redis = server.client();
    world.env.REDIS_URL = server.url;
    const commits = world.own(await CommitLog.watch([{ host: server.place.ip, port: server.port }]));
    const [, ...apis] = await Promise.all([
      world.spawn('worker', net.host('writer')),
      world.spawn('api', net.host('api-a')),
      world.spawn('api', net.host('api-b')),
    ]);
    const targets = new Targets(apis.map((a) => a.url));
    const testLocks = new LockClient(redis, { clientId: 'partition-test' });
    world.own({ stop: () => testLocks.close() });
    const s = await saleWithLoad(targets, redis, {
      prefix: 'pc',
      stock: STOCK,
      shards: 1,
      orders: ORDERS,
      ratePerSec: 250,
    });
    const shard = s.sale.shardKeys[0] as string;
    const load = s.startLoad();
    const rounds: Record<string, unknown>[] = [];
    for (let k = 0; k < ROUNDS; k++) {
      await load.reached(Math.floor(ORDERS * (0.1 + 0.22 * k)));
      const hold = await testLocks.acquire(s.lockName, { leaseMs: LEASE_MS, waitMs: 10_000 });
      await until('orders to queue for the held lock', async () => (await redis.hlen(s.lock.waiters)) >= 3);
      const before = await redisNow(redis);
      clock.step(STEP_S);
      const after = await redisNow(redis);
      // The step is real: Redis' clock moved past the lease at once, and the hold with it.
      const lapsed = !(await redis.hexists(s.lock.lock, hold.owner));
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
        id: `${s.productId}.stale-${k}`,
        entry: JSON.stringify({ orderId: `${s.productId}.stale-${k}` }),
        deadline: 0,
        startsAt: 0,
        endsAt: 0,
        fenced: '',
      });
      await hold.release().catch(() => {});
      rounds.push({ jumpedMs: after - before, lapsed, staleStatus: status });
      check(
        result,
        after - before >= STEP_S * 1000,
        `round ${k + 1}: Redis' clock moved ${after - before} ms`,
      );
      check(result, lapsed, `round ${k + 1}: the hold outlived a ${STEP_S} s step of a ${LEASE_MS} ms lease`);
      check(
        result,
        status === ShardStatus.notOwner || status === ShardStatus.staleToken,
        `round ${k + 1}: a decrement under the lapsed hold was not refused (status ${status})`,
      );
      log(
        'c',
        `round ${k + 1}: Redis' clock +${STEP_S} s (moved ${after - before} ms), stale decrement ${status}`,
      );
    }
    const fenced = await fencedTotal(apis);
    result.details.rounds = rounds;
    result.details.fencedDecrements = fenced;
    result.faults = `${rounds.length} steps of Redis' clock +${STEP_S} s (libfaketime) while shard 0's lock was held (lease ${LEASE_MS} ms) with orders queued; ${fenced} API decrements fenced`;
    await finish(result, world, { targets, redis, commits, load, productId: s.productId, total: STOCK });
  });
}
