// BENCHMARK-ONLY endpoints under /bench (mounted only with BENCH_ENDPOINTS=1, for `npm run bench`):
// the order path's ceilings without Redis (/bare) and without the lock and fence (/unlocked[?enqueue=1]).
import { randomBytes } from 'node:crypto';
import { type Request, type Response, Router } from 'express';
import type { Catalog } from '../inventory/catalog.ts';
import { BusyError, SoldOutError, UnknownProductError } from '../inventory/errors.ts';
import { shardKeys } from '../inventory/keys.ts';
import type { HandOff } from '../orders/hand-off.ts';
import type { OrderRecord } from '../orders/order.ts';
import type { RedisClient } from '../redis/connection.ts';
import { defineScripts, luaScript, replyInts } from '../redis/lua.ts';
import { orderBody, parse } from './validation.ts';

export interface BenchDeps {
  redis: RedisClient;
  catalog: Catalog;
  /** The same batched hand-off as the real path. */
  handOff: HandOff;
  maxOrderQuantity: number;
}

const BENCH_DECREMENT = luaScript(
  'flashsaleBenchDecrement',
  3,
  new URL('../inventory/scripts/bench-decrement.lua', import.meta.url),
);
type BenchRedis = RedisClient & {
  flashsaleBenchDecrement(
    stock: string,
    sold: string,
    reservations: string,
    quantity: number,
    orderId: string,
    json: string,
  ): Promise<unknown>;
};

/** A reshard retired the picked shard this many times in a row: answer busy, like the real path. */
const MAX_GENERATION_HOPS = 5;

/**
 * `POST /bench/bare` validates like `POST /api/orders` and answers the same-shaped 202 without Redis.
 * `POST /bench/unlocked` runs one script that decrements a round-robin shard and writes the
 * reservation, with no lock and no fence; `?enqueue=1` adds the BullMQ enqueue. Their orders are
 * real, so the sale's invariants hold afterwards, but nothing excludes an admin reshard: never expose them.
 */
export function benchRouter(deps: BenchDeps): Router {
  const { catalog, handOff } = deps;
  defineScripts(deps.redis, [BENCH_DECREMENT]);
  const redis = deps.redis as BenchRedis;
  const schema = orderBody(deps.maxOrderQuantity);
  const router = Router();

  const accepted = (res: Response, o: Pick<OrderRecord, 'orderId' | 'productId' | 'userId' | 'quantity'>) => {
    res.status(202).json({
      orderId: o.orderId,
      status: 'reserved',
      productId: o.productId,
      userId: o.userId,
      quantity: o.quantity,
    });
  };

  router.post('/bare', (req: Request, res: Response) => {
    const body = parse(schema, req.body);
    accepted(res, { ...body, orderId: `${body.productId}.0.0.${randomBytes(12).toString('hex')}` });
  });

  router.post('/unlocked', async (req: Request, res: Response) => {
    const body = parse(schema, req.body);
    const enqueue = req.query.enqueue === '1';
    for (let hop = 0; hop < MAX_GENERATION_HOPS; hop++) {
      const sale = await catalog.get(body.productId);
      if (!sale) throw new UnknownProductError(body.productId);
      const { first, empty } = catalog.shardOrder(sale);
      let retired = false;
      for (const index of [...first, ...empty]) {
        const stockKey = sale.shardKeys[index] as string;
        const k = shardKeys(stockKey);
        const record: OrderRecord = {
          orderId: `${sale.productId}.${sale.generation}.${index}.${randomBytes(12).toString('hex')}`,
          productId: sale.productId,
          userId: body.userId,
          quantity: body.quantity,
          shardKey: stockKey,
          generation: sale.generation,
          shardIndex: index,
          reservedAt: Date.now(),
          token: 0,
        };
        const [status, left = 0] = replyInts(
          await redis.flashsaleBenchDecrement(
            k.stock,
            k.sold,
            k.reservations,
            body.quantity,
            record.orderId,
            JSON.stringify(record),
          ),
        );
        if (status === 1) {
          // As on the real path, a failed enqueue leaves the reservation to the sweeper.
          if (enqueue) await handOff.send(record).catch(() => {});
          accepted(res, record);
          return;
        }
        if (status === 0) {
          if (left === 0) catalog.markEmpty(sale, index);
          continue;
        }
        retired = true;
        break;
      }
      if (!retired) throw new SoldOutError(body.productId, body.quantity, 0);
      catalog.invalidate(body.productId);
    }
    throw new BusyError(body.productId);
  });

  return router;
}
