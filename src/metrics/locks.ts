// Lock metrics: wait and hold times of the shard locks and their hand-offs, by lock kind, fed by the
// lock clients' onEvent hook (LockClient, or EtcdLock / ZooKeeperLock with LOCK_BACKEND).

import type { LockEvent } from '@flashsale/lock';
import { Counter, Histogram, type Registry } from 'prom-client';
import { lockKind } from '../inventory/keys.ts';

const LOCK_BUCKETS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];

export function lockMetrics(registry: Registry) {
  const lockWait = new Histogram({
    name: 'flashsale_lock_wait_seconds',
    help: 'Time to obtain a lock (the acquiring round trip included), by lock kind and result',
    labelNames: ['lock', 'result'] as const,
    buckets: LOCK_BUCKETS,
    registers: [registry],
  });
  const lockHold = new Histogram({
    name: 'flashsale_lock_hold_seconds',
    help: 'Time a lock was held, as the client sees it: from acquisition (or the send of a pipelined acquire) to the release reply',
    labelNames: ['lock'] as const,
    buckets: LOCK_BUCKETS,
    registers: [registry],
  });
  const lockHandoffs = new Counter({
    name: 'flashsale_lock_handoffs_total',
    help: 'Locks received by hand-off from the previous holder (a queued waiter woken directly)',
    labelNames: ['lock'] as const,
    registers: [registry],
  });
  return {
    lockWait,
    lockHold,
    lockHandoffs,
    /** The lock clients' onEvent hook. */
    observeLock(e: LockEvent): void {
      const lock = lockKind(e.name);
      switch (e.type) {
        case 'acquired':
          lockWait.observe({ lock, result: 'acquired' }, e.waitMs / 1000);
          if (e.handoff) lockHandoffs.inc({ lock });
          break;
        case 'timeout':
          lockWait.observe({ lock, result: 'timeout' }, e.waitMs / 1000);
          break;
        case 'released':
          lockHold.observe({ lock }, e.heldMs / 1000);
          break;
      }
    },
  };
}
