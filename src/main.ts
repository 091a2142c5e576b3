// `npm start`: the whole service in one process — migrations, HTTP API, writer and sweeper.
import { run, startApi, startWorker } from './runtime.ts';

await run('main', async (rt) => {
  startWorker(rt);
  await startApi(rt);
});
