// The API process of `npm run bench`: src/api.ts (or, given `main`, src/main.ts: API + writer in one
// process) plus the benchmark-only routes under /bench (bench-routes.ts), through the app's hook.
import cluster from 'node:cluster';
import { serveApi } from '../../src/boot/api.ts';
import { boot } from '../../src/boot/boot.ts';
import { run } from '../../src/boot/run.ts';
import { startWorker } from '../../src/boot/worker.ts';
import { benchRoutes } from './bench-routes.ts';

/** API workers (API_WORKERS > 1) are forks of this file with the same argument. */
const role = process.argv[2] === 'main' ? 'main' : 'api';

await run(
  role,
  () => boot(role),
  async (rt) => {
    if (role === 'main' && cluster.isPrimary) await startWorker(rt);
    await serveApi(rt, benchRoutes);
  },
);
