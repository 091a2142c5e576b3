// The public product endpoint: GET /api/products/:productId (what is left on sale, and when).
import type { Router } from 'express';
import { UnknownProductError } from '../../inventory/errors.ts';
import { availableStock } from '../../inventory/sale.ts';
import { windowView } from '../../inventory/settings.ts';
import type { AppDeps } from '../app-deps.ts';
import { parse, productId as productIdSchema } from '../validation.ts';
import { exactRouter, onlyMethods } from './allow.ts';

export function productsRouter(deps: Pick<AppDeps, 'redis' | 'catalog' | 'room'>): Router {
  const { redis, catalog, room } = deps;
  const router = exactRouter();
  router
    .route('/api/products/:productId')
    .get(async (req, res) => {
      const productId = parse(productIdSchema, req.params.productId, 'productId');
      const sale = await catalog.get(productId);
      if (!sale) throw new UnknownProductError(productId);
      const available = await availableStock(redis, sale);
      const queue = await room?.view(productId);
      res.json({
        productId,
        available,
        soldOut: available === 0,
        ...(queue && { queue }),
        ...windowView(sale.window),
        ...(sale.paymentTimeoutSec > 0 && { paymentTimeoutSec: sale.paymentTimeoutSec }),
      });
    })
    .all(onlyMethods('GET'));
  return router;
}
