// Reproduction (not part of the suite's table): ioredis sends a command again after a reconnect when
// its reply was lost (autoResendUnfulfilledCommands, on by default), so the order path's reserve
// pipeline — acquire + fenced decrement + release — runs twice when the connection breaks after Redis
// executed it: two units leave the shard, `sold` counts two, but there is one reservation, one order.
// Exit code 1 while the bug is there.
//
//   npx tsx test/faults/repro-ioredis-resend.ts
//
// Uses the real StockReserver / LockClient / Catalog over a connection configured like the API's
// (src/runtime.ts redisConnection: maxRetriesPerRequest 1), through a proxy that drops Redis' replies
// for 100 ms and then resets the connection.
import { Redis } from 'ioredis';
import { SaleAdmin } from '../../src/inventory/admin.ts';
import { Catalog } from '../../src/inventory/catalog.ts';
import { shardKeys } from '../../src/inventory/keys.ts';
import { StockReserver } from '../../src/inventory/reserve.ts';
import { loadSale } from '../../src/inventory/sale.ts';
import { LockClient } from '../../src/lock/index.ts';
import { RedisServer } from '../support/redis-server.ts';
import { FaultProxy } from './proxy.ts';

const server = await RedisServer.start();
const proxy = await FaultProxy.start(server.port);
const direct = server.client();
await new SaleAdmin(direct, new LockClient(direct)).put('repro', { stock: 10, shards: 1 });

const redis = new Redis(proxy.port, '127.0.0.1', { maxRetriesPerRequest: 1, lazyConnect: true });
redis.on('error', () => {});
await redis.connect();
const subscriber = redis.duplicate({ maxRetriesPerRequest: null });
subscriber.on('error', () => {});
const catalog = new Catalog(redis, subscriber);
await catalog.start();
await catalog.get('repro');
const reserver = new StockReserver(
  redis,
  new LockClient(redis, { subscriber: subscriber.duplicate() }),
  catalog,
  {
    leaseMs: 5000,
    waitMs: 2000,
  },
);

// A first order with a healthy connection (warms the lock client's subscription too).
await reserver.reserve({ productId: 'repro', userId: 'u0', quantity: 1 });

const cut = proxy.cut(100); // replies dropped from now on; connections reset in 100 ms
const record = await reserver.reserve({ productId: 'repro', userId: 'u1', quantity: 1 });
await cut;

const sale = await loadSale(direct, 'repro');
const k = shardKeys(sale?.shardKeys[0] as string);
const stock = Number(await direct.get(k.stock));
const sold = Number(await direct.get(k.sold));
const reservations = await direct.hlen(k.reservations);
console.log(`two orders placed; the second while the connection broke: ${record.orderId}`);
console.log(
  `shard: stock ${stock} (expected 8), sold ${sold} (expected 2), reservations ${reservations} (expected 2)`,
);
const ok = stock === 8 && sold === 2 && reservations === 2;
console.log(
  ok ? 'OK: executed once' : 'BUG: the reserve pipeline ran twice (a unit left the shard with no order)',
);
redis.disconnect();
subscriber.disconnect();
await proxy.close();
await server.stop();
process.exit(ok ? 0 : 1);
