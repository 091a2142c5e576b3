// `npm start`: the whole service — migrations, HTTP API, writer and sweeper; the API in this process,
// or in API_WORKERS worker processes beside this one (which keeps the writer and sweeper).
import cluster from 'node:cluster';
import { serveApi } from './boot/api.ts';
import { boot } from './boot/boot.ts';
import { run } from './boot/run.ts';
import { startWorker } from './boot/worker.ts';

await run(
  'main',
  // A cluster worker (a fork of this entry point) uses the servers its primary found or started.
  () => boot('main', process.env, { devServers: cluster.isPrimary }),
  async (rt) => {
    // A cluster worker is a fork of this entry point: it serves the API only.
    if (cluster.isPrimary) await startWorker(rt);
    await serveApi(rt);
  },
);
