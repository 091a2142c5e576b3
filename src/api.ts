// Production entry point: the HTTP API only, API_WORKERS processes of it (scale it out; the writer
// runs in worker.ts).
import { run, serveApi } from './runtime.ts';

await run('api', async (rt) => {
  await serveApi(rt);
});
