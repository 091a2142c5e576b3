// BENCHMARK-ONLY endpoints under /bench, mounted by bench/order/bench-api.ts through the app factory's
// hook (never by the service): the order path's ceilings without Redis (/bare) and without the lock
// and fence (/unlocked[?enqueue=1]).
import { Router } from 'express';
import { accepted, send } from '../../src/http/answers.ts';
import type { ApiExtension } from '../../src/http/app.ts';
import { jsonBody } from '../../src/http/body.ts';
import { orderBody, parse } from '../../src/http/validation.ts';
import type { Catalog } from '../../src/inventory/catalog.ts';
import { BusyError, SoldOutError, UnknownProductError } from '../../src/inventory/errors.ts';
import { shardKeys } from '../../src/inventory/keys.ts';
import { newTicket } from '../../src/orders/attempt.ts';
import type { OrderRecord } from '../../src/orders/order.ts';
import type { RedisClient } from '../../src/redis/connection.ts';
import { replyInts, typedScript } from '../../src/redis/lua.ts';

const BENCH_DECREMENT = typedScript({
  name: 'flashsaleBenchDecrement',
  file: new URL('./bench-decrement.lua', import.meta.url),
  keys: ['stock', 'sold', 'reservations'],
  args: ['quantity', 'id', 'entry'],
  parse: (reply) => replyInts(reply),
});

/** A reshard retired the picked shard this many times in a row: answer busy, like the real path. */
const MAX_GENERATION_HOPS = 5;

/**
 * `POST /bench/bare` validates like `POST /api/orders` and answers the same 202 without Redis.
 * `POST /bench/unlocked` runs one script that decrements a shard (in the catalog's shard order) and
 * writes the reservation, with no lock and no fence; `?enqueue=1` adds the hand-off to the writer.
 * Their orders are real, so the sale's invariants hold afterwards, but nothing excludes an admin
 * reshard: never expose them.
 */
export const benchRoutes: ApiExtension = (app, { redis, catalog, handOff, maxOrderQuantity }) => {
  const schema = orderBody(maxOrderQuantity);
  const router = Router();
  router.post('/bare', (req, res) => {
    const body = parse(schema, req.body);
    send(res, accepted({ ...body, orderId: `${body.productId}.0.0.${newTicket()}` }));
  });
  router.post('/unlocked', async (req, res) => {
    const body = parse(schema, req.body);
    const record = await reserveUnlocked(redis, catalog, body);
    // As on the real path, a failed enqueue leaves the reservation to the sweeper.
    if (req.query.enqueue === '1') await handOff.send(record).catch(() => {});
    send(res, accepted(record));
  });
  app.use('/bench', jsonBody(), router);
};

/** Reserves on the first shard of the catalog's order that holds the quantity, with no lock or fence. */
async function reserveUnlocked(
  redis: RedisClient,
  catalog: Catalog,
  body: { productId: string; userId: string; quantity: number },
): Promise<OrderRecord> {
  for (let hop = 0; hop < MAX_GENERATION_HOPS; hop++) {
    const sale = await catalog.get(body.productId);
    if (!sale) throw new UnknownProductError(body.productId);
    const { first, empty } = catalog.shardOrder(sale);
    let retired = false;
    for (const index of [...first, ...empty]) {
      const stockKey = sale.shardKeys[index] as string;
      const k = shardKeys(stockKey);
      const record: OrderRecord = {
        orderId: `${sale.productId}.${sale.generation}.${index}.${newTicket()}`,
        ...body,
        shardKey: stockKey,
        generation: sale.generation,
        shardIndex: index,
        reservedAt: Date.now(),
        token: 0,
      };
      const [status, left = 0] = await BENCH_DECREMENT.run(redis, {
        stock: k.stock,
        sold: k.sold,
        reservations: k.reservations,
        quantity: body.quantity,
        id: record.orderId,
        entry: JSON.stringify(record),
      });
      if (status === 1) return record;
      if (status === 0) {
        if (left === 0) catalog.markEmpty(sale, index);
        continue;
      }
      retired = true;
      break;
    }
    if (!retired) throw new SoldOutError(body.productId);
    catalog.invalidate(body.productId);
  }
  throw new BusyError(body.productId);
}
