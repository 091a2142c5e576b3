// The admin endpoints under /admin, behind the bearer token (checked before a body is read): sale
// changes through the audited use case (SaleChanges), and the sale's status, reconcile and live view.
import type express from 'express';
import type { Request, Router } from 'express';
import { saleSummary } from '../../admin/sale-changes.ts';
import { reconcile } from '../../inventory/reconcile.ts';
import { settingsView } from '../../inventory/settings.ts';
import { saleStatus } from '../../inventory/status.ts';
import { saleView } from '../../ops/sale-view.ts';
import { adminActor } from '../admin-actor.ts';
import { adminAuth } from '../admin-auth.ts';
import type { AppDeps } from '../app-deps.ts';
import { jsonBody } from '../body.ts';
import { parse, productId as productIdSchema, reshardBody, restockBody, saleBody } from '../validation.ts';
import { exactRouter, onlyMethods } from './allow.ts';
import { liveRoutes } from './dashboard.ts';

type AdminDeps = Pick<AppDeps, 'redis' | 'db' | 'changes' | 'metrics' | 'failedJobsOf' | 'room' | 'doors'>;

const productParam = (req: Request) => parse(productIdSchema, req.params.productId, 'productId');

export function adminRouter(deps: AdminDeps): Router {
  const { redis, db, metrics, failedJobsOf, room } = deps;
  const views = { redis, db, failedJobsOf, queueView: room && ((id: string) => room.view(id)) };
  const router = exactRouter();
  router.use(adminAuth(deps.doors.adminBrake), jsonBody());
  router
    .route('/products/:productId')
    .put(putSale(deps))
    .get(async (req, res) => {
      res.json(await saleView(views, productParam(req)));
    })
    .all(onlyMethods('GET', 'PUT'));
  router.route('/products/:productId/restock').post(restock(deps)).all(onlyMethods('POST'));
  router.route('/products/:productId/reshard').post(reshard(deps)).all(onlyMethods('POST'));
  router
    .route('/products/:productId/reconcile')
    .get(async (req, res) => {
      const status = await saleStatus(redis, db, productParam(req));
      // The units of both sums checked (returning and paid are not in the audit's summary).
      res.json({
        ...reconcile(status),
        ...saleSummary(status),
        returning: status.returning,
        paid: status.paid,
      });
    })
    .all(onlyMethods('GET'));
  const waitingLine = room && ((productId: string) => room.stats(productId));
  router.use(liveRoutes({ views, metrics, waitingLine }));
  return router;
}

function putSale(deps: AdminDeps): express.RequestHandler {
  return async (req, res) => {
    const productId = productParam(req);
    const spec = parse(saleBody, req.body);
    const r = await timed(deps, 'put', () =>
      deps.changes.put(
        productId,
        {
          stock: spec.stock,
          shards: spec.shards,
          perUserLimit: spec.perUserLimit ?? 0,
          window: { startsAt: spec.startsAt ?? null, endsAt: spec.endsAt ?? null },
          paymentTimeoutSec: spec.paymentTimeoutSec ?? 0,
        },
        requester(req, spec),
      ),
    );
    // A (re)created sale has the lottery window its PUT names, or none.
    const lottery = await deps.room?.configureLottery(
      productId,
      spec.queue?.lotterySeconds ?? 0,
      spec.startsAt ?? null,
    );
    res.status(r.created ? 201 : 200).json({
      productId,
      total: r.sale.total,
      available: r.available,
      shards: r.sale.shardKeys.length,
      generation: r.sale.generation,
      ...settingsView(r.sale),
      ...(lottery && { queue: { lottery } }),
    });
  };
}

function restock(deps: AdminDeps): express.RequestHandler {
  return async (req, res) => {
    const productId = productParam(req);
    const request = parse(restockBody, req.body);
    const { delta } = request;
    const r = await timed(deps, 'restock', () =>
      deps.changes.restock(productId, delta, requester(req, request)),
    );
    res.json({
      productId,
      delta,
      total: r.sale.total,
      available: r.available,
      generation: r.sale.generation,
    });
  };
}

function reshard(deps: AdminDeps): express.RequestHandler {
  return async (req, res) => {
    const productId = productParam(req);
    const request = parse(reshardBody, req.body);
    const { shards } = request;
    const r = await timed(deps, 'reshard', () =>
      deps.changes.reshard(productId, shards, requester(req, request)),
    );
    res.json({
      productId,
      shards: r.sale.shardKeys.length,
      generation: r.sale.generation,
      available: r.available,
    });
  };
}

/** The audit's requester: the authenticated actor (X-Admin-Actor only as its label) and the change as parsed. */
function requester(req: Request, request: object) {
  return { actor: adminActor(req), request };
}

/** Counts and times an admin change (metrics: flashsale_admin_change*, flashsale_reshards_total). */
async function timed<T>(deps: AdminDeps, kind: 'put' | 'restock' | 'reshard', change: () => Promise<T>) {
  const endTimer = deps.metrics.adminChangeSeconds.startTimer({ kind });
  const result = await change().finally(endTimer);
  deps.metrics.adminChanges.inc({ kind });
  if (kind === 'reshard') deps.metrics.reshards.inc();
  return result;
}
