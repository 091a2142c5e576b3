// Ops endpoints: GET /healthz (the process is up), /readyz (Redis, Postgres and the lock service
// reachable; the waiting buyers' streams held) and /metrics (Prometheus).
import type { Router } from 'express';
import { checkDatabase } from '../../db/database.ts';
import type { AppDeps } from '../app-deps.ts';
import { exactRouter, onlyMethods } from './allow.ts';

export function opsRouter(
  deps: Pick<AppDeps, 'redis' | 'db' | 'metrics' | 'lockService' | 'metricsElsewhere' | 'streams'>,
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
      const ready = Object.values(body).every(Boolean);
      // Streams held say how full this process is; they do not make it unready (past the bound, buyers poll).
      const { streams } = deps;
      res
        .status(ready ? 200 : 503)
        .json(streams ? { ...body, streams: { held: streams.size, max: streams.max } } : body);
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
