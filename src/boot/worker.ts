// The worker's wiring: the writer on every order queue (and queues registered later), the outbox
// sweeper, the expiry sweep, the admin-change recovery and the periodic reconcile.

import { LockClient } from '@flashsale/lock';
import type { WorkerConfig } from '../config/load.ts';
import { SaleAdmin } from '../inventory/admin.ts';
import { startAdminRecovery } from '../inventory/recovery.ts';
import { allQueues } from '../metrics.ts';
import { startReconcileWatch } from '../ops/reconcile-watch.ts';
import { BuyerLimits } from '../orders/buyer-limit.ts';
import { OrderWriter } from '../orders/order-writer.ts';
import {
  closeBull,
  type OrderQueue,
  queuePrefixes,
  registeredQueues,
  registerQueues,
} from '../orders/queue.ts';
import { startSweeper } from '../orders/sweeper.ts';
import { every } from '../periodic.ts';
import type { Runtime } from './boot.ts';
import { orderQueue, startLifecycle } from './parts.ts';

/** The writer on the queues of this slot map and every one an API process registered (maybe on an older map). */
async function startOrderWriter(rt: Runtime<WorkerConfig>) {
  const { config, logger, metrics, db, redis } = rt;
  const own = queuePrefixes(redis);
  await registerQueues(redis, own);
  const prefixes = [...new Set([...own, ...(await registeredQueues(redis))])];
  const writer = new OrderWriter({
    connection: rt.target,
    prefixes,
    db,
    ...config.writer,
    logger,
    onBatch: (s) => {
      metrics.writerBatchSize.observe(s.size);
      metrics.writerBatchSeconds.observe(s.ms / 1000);
    },
  });
  // Queues registered later (an API process started on a changed slot map) are consumed too.
  const queueWatch = every(config.lifecycle.sweepIntervalMs, () =>
    registeredQueues(redis)
      .then((found) => writer.consume(found))
      .catch((err: unknown) => logger.warn({ err }, 'reading the order queues failed; will retry')),
  );
  const queues = writer.workers().map((w) => orderQueue(rt, w.opts.prefix ?? own[0] ?? ''));
  metrics.watchQueue(allQueues(queues));
  metrics.watchReservations(redis);
  return { writer, queueWatch, queues };
}

/** What repairs and watches the sales in the background: admin-change recovery and the reconcile. */
function startWatches(rt: Runtime<WorkerConfig>, admin: SaleAdmin) {
  const { config, logger, metrics, db, redis } = rt;
  const recovery = startAdminRecovery({
    redis,
    admin,
    ageMs: config.lifecycle.sweepAgeMs,
    intervalMs: config.lifecycle.sweepIntervalMs,
    logger,
  });
  const reconcileWatch = startReconcileWatch({
    redis,
    db,
    metrics,
    intervalMs: config.lifecycle.reconcileIntervalMs,
    logger,
  });
  return { recovery, reconcileWatch };
}

/** The worker's part of a process (src/worker.ts, and the primary of src/main.ts). */
export async function startWorker(rt: Runtime<WorkerConfig>): Promise<void> {
  const { config, logger, db, redis } = rt;
  const { writer, queueWatch, queues } = await startOrderWriter(rt);
  const sweeper = startSweeper({
    redis,
    db,
    queue: queues[0] as OrderQueue,
    ageMs: config.lifecycle.sweepAgeMs,
    intervalMs: config.lifecycle.sweepIntervalMs,
    logger,
  });
  const locks = new LockClient(redis);
  const admin = new SaleAdmin(redis, locks, rt.lockService);
  const { expiry } = startLifecycle(rt, admin, new BuyerLimits(redis));
  const { recovery, reconcileWatch } = startWatches(rt, admin);
  if (reconcileWatch) rt.closers.push(() => reconcileWatch.close());
  logger.info('writer, sweeper and admin-change recovery started');
  // Closed last pushed first: the sweeper and the writer stop before the queues and locks they use.
  rt.closers.push(
    () => locks.close(),
    () => expiry.close(),
    () => recovery.close(),
    async () => void (await Promise.all(queues.map(closeBull))),
    () => writer.close(),
    () => queueWatch.close(),
    () => sweeper.close(),
  );
}
