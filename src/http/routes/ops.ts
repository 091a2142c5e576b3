// Ops endpoints: GET /healthz (the process is up), /readyz (Redis, Postgres and the lock service
// reachable) and /metrics (Prometheus).
import type { Router } from 'express';
import { checkDatabase } from '../../db/database.ts';
import type { AppDeps } from '../app-deps.ts';
import { exactRouter, onlyMethods } from './allow.ts';

export function opsRouter(
  deps: Pick<AppDeps, 'redis' | 'db' | 'metrics' | 'lockService' | 'metricsElsewhere'>,
): Router {
  const { redis, db, metrics, lockService } = deps;
  const router = exactRouter();
  router
    .route('/healthz')
    .get((_req, res) => {
      res.json({ status: 'ok' });
    })
    .all(onlyMethods('GET'));
  router
    .route('/readyz')
    .get(async (_req, res) => {
      const [r, p, l] = await Promise.allSettled([redis.ping(), checkDatabase(db), lockService?.ping()]);
      const body: Record<string, boolean> = {
        redis: r.status === 'fulfilled',
        postgres: p.status === 'fulfilled',
      };
      if (lockService) body[lockService.backend] = l.status === 'fulfilled';
      res.status(Object.values(body).every(Boolean) ? 200 : 503).json(body);
    })
    .all(onlyMethods('GET'));
  // With METRICS_PORT, /metrics is served there only (src/boot/metrics-server.ts), not to the API's clients.
  if (deps.metricsElsewhere) return router;
  router
    .route('/metrics')
    .get(async (_req, res) => {
      res.type(metrics.registry.contentType).send(await metrics.registry.metrics());
    })
    .all(onlyMethods('GET'));
  return router;
}
