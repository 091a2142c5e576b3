// Production entry point: the BullMQ writer that persists orders into Postgres, and the outbox sweeper,
// with /metrics on PORT. It serves no API, so it needs neither ADMIN_TOKEN nor QUEUE_SECRET.
import { boot } from './boot/boot.ts';
import { startMetricsServer } from './boot/metrics-server.ts';
import { run } from './boot/run.ts';
import { startWorker } from './boot/worker.ts';

await run(
  'worker',
  () => boot('worker', process.env, { api: false }),
  async (rt) => {
    await startWorker(rt);
    await startMetricsServer(rt);
  },
);
