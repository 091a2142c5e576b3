// The API process of `npm run bench`: src/api.ts (or, given `main`, src/main.ts: API + writer in one
// process) plus the benchmark-only routes under /bench (bench-routes.ts), through the app's hook.
import cluster from 'node:cluster';
import { run, serveApi, startWorker } from '../../src/runtime.ts';
import { benchRoutes } from './bench-routes.ts';

/** API workers (API_WORKERS > 1) are forks of this file with the same argument. */
const role = process.argv[2] === 'main' ? 'main' : 'api';

await run(role, async (rt) => {
  if (role === 'main' && cluster.isPrimary) await startWorker(rt);
  await serveApi(rt, benchRoutes);
});
