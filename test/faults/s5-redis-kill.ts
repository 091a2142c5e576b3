// Scenario 5: a private Redis with `appendonly yes`, `appendfsync always`, killed with kill -9 three
// times under load and restarted on the same port and data directory (AOF replayed). The API's and
// the writer's ioredis clients reconnect by themselves; orders during an outage get 503 (or wait).
// Both the stock and the BullMQ jobs live in this Redis, so AOF-always must keep the jobs of every
// 202 too. Users may buy one unit (per-user limit 1) and each sends two orders, each with its own
// Idempotency-Key; orders without a definite answer are retried with their key afterwards.
// Checks: every 202 has its row; sold == rows; no oversell; no user above the limit.
import {
  emptyResult,
  Load,
  log,
  noteStuckKeys,
  retryUnanswered,
  type ScenarioResult,
  sleep,
  startSale,
  unitOrder,
  verifyOrders,
  withFaultInfra,
} from './lib.ts';
import { FaultProxy } from './proxy.ts';

const USERS = 1200;
const ORDERS = 2 * USERS;
const STOCK = 1000;
const KILLS = 3;

export async function redisKill(): Promise<ScenarioResult> {
  const result = emptyResult('5', 'Redis (AOF always) kill -9 ×3');
  const redisArgs = ['--appendonly', 'yes', '--appendfsync', 'always'];
  return withFaultInfra(result, { redisArgs }, async (infra, procs) => {
    const sale = { stock: STOCK, shards: 8, perUserLimit: 1 };
    const { targets, productId } = await startSale(infra, procs, 's5', sale);

    const load = new Load({
      targets,
      productId,
      orders: ORDERS,
      concurrency: 64,
      ratePerSec: 300,
      order: unitOrder(productId, USERS),
    });
    const outages: number[] = [];
    const chaos = (async () => {
      for (let k = 0; k < KILLS; k++) {
        await load.reached(Math.floor(ORDERS * (0.12 + 0.25 * k + Math.random() * 0.1)));
        await infra.redis.kill();
        const down = performance.now();
        log('5', `killed redis-server after ${load.dispatched} orders dispatched`);
        await sleep(300 + Math.random() * 700);
        await infra.redis.restart();
        outages.push(Math.round(performance.now() - down));
      }
    })();
    await Promise.all([load.done, chaos]);
    const { retried, stuck } = await retryUnanswered(targets, productId, load.logs, 1);
    result.faults = `${outages.length} Redis kills (down ${outages.join('/')} ms), ${retried} retries with the same key`;
    result.details.outagesMs = outages;
    result.details.retriedWithSameKey = retried;
    noteStuckKeys(result, stuck, 'the Redis kills');
    await verifyOrders(result, infra, targets, load.logs, {
      productId,
      total: STOCK,
      perUserLimit: 1,
    });
  });
}

// Scenario 5b: the same order path, but instead of Redis dying, the API's connections to Redis break
// with replies in flight (a TCP proxy drops Redis' answers for 30 ms, then resets every connection;
// five times under load). Redis itself keeps every write. Commands Redis executed whose answer was
// lost must not take effect twice when the client reconnects.
export async function redisReplyLost(): Promise<ScenarioResult> {
  const result = emptyResult('5b', 'Redis connections cut, replies in flight ×5');
  return withFaultInfra(result, {}, async (infra, procs) => {
    const proxy = await FaultProxy.start(infra.redis.port);
    try {
      const api = { REDIS_URL: `redis://127.0.0.1:${proxy.port}` };
      const sale = { stock: STOCK, shards: 8, perUserLimit: 1 };
      const { targets, productId } = await startSale(infra, procs, 's5b', sale, { api });
      const load = new Load({
        targets,
        productId,
        orders: ORDERS,
        concurrency: 64,
        ratePerSec: 400,
        order: unitOrder(productId, USERS),
      });
      let cuts = 0;
      const chaos = (async () => {
        for (let k = 0; k < 5; k++) {
          await load.reached(Math.floor(ORDERS * (0.08 + 0.16 * k + Math.random() * 0.06)));
          await proxy.cut(30);
          cuts += 1;
        }
      })();
      await Promise.all([load.done, chaos]);
      const { retried, stuck } = await retryUnanswered(targets, productId, load.logs, 1);
      result.faults = `${cuts} cuts of the API's Redis connections (${proxy.cutConnections} connections) with replies in flight, ${retried} retries with the same key`;
      result.details.retriedWithSameKey = retried;
      noteStuckKeys(result, stuck, 'the cuts');
      await verifyOrders(result, infra, targets, load.logs, { productId, total: STOCK, perUserLimit: 1 });
    } finally {
      // The API goes before its proxy does.
      await procs.reapAll();
      await proxy.close();
    }
  });
}
