// Production entry point: the BullMQ writer that persists orders into Postgres, and the outbox sweeper.
import { run, startWorker } from './runtime.ts';

await run('worker', async (rt) => {
  await startWorker(rt);
});
