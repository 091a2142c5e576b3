// Production entry point: the HTTP API only (scale it out; the writer runs in worker.ts).
import { run, startApi } from './runtime.ts';

await run('api', async (rt) => {
  await startApi(rt);
});
