// Inventory metrics: guarded decrements on the stock shards, accepted orders still held in the
// reservation hashes (one bounded SCAN per scrape), and the worker's periodic reconcile.

import { Counter, Gauge, type Registry } from 'prom-client';
import { RESERVATION_HASHES } from '../inventory/keys.ts';
import { countReservations, type ReservationCount } from '../inventory/reservations.ts';
import type { RedisClient } from '../redis/connection.ts';
import type { ScrapeRead } from './process.ts';

export function inventoryMetrics(registry: Registry, read: ScrapeRead) {
  const shardAttempts = new Counter({
    name: 'flashsale_shard_attempts_total',
    help: 'Guarded decrements by outcome (reserved, insufficient, retired, fenced); fallback="false" is the round-robin pick, "true" a fallback to another shard',
    labelNames: ['outcome', 'fallback'] as const,
    registers: [registry],
  });
  const fencingRefusals = new Counter({
    name: 'flashsale_fencing_refusals_total',
    help: 'Decrements the shard refused because the lock hold was no longer current (lease lapsed or a newer token seen)',
    registers: [registry],
  });
  return {
    shardAttempts,
    fencingRefusals,
    /** StockReserver's onShardAttempt hook. */
    observeShardAttempt(outcome: string, fallback: boolean): void {
      shardAttempts.inc({ outcome, fallback: String(fallback) });
      if (outcome === 'fenced') fencingRefusals.inc();
    },
    ...reservationMetrics(registry, read),
    reconcileDifferences: new Gauge({
      name: 'flashsale_reconcile_differences',
      help: "Products whose reconcile found differences on two reads in a row, at the worker's last periodic check (RECONCILE_INTERVAL_MS)",
      registers: [registry],
    }),
    reconcileChecked: new Gauge({
      name: 'flashsale_reconcile_products_checked',
      help: "Products the worker's last periodic reconcile checked",
      registers: [registry],
    }),
  };
}

/** The two reservation gauges, read on scrape from the Redis the runtime hands over. */
function reservationMetrics(registry: Registry, read: ScrapeRead) {
  let redis: RedisClient | undefined;
  // One scan per scrape, shared by the two gauges (the registry collects them concurrently); a failed
  // or timed-out scan shows as NaN (unknown), not as 0 or a stale value.
  let scanning: Promise<ReservationCount | undefined> | undefined;
  const scan = (): Promise<ReservationCount | undefined> => {
    const r = redis;
    if (!r) return Promise.resolve(undefined);
    scanning ??= read('reservations', 'reservation scan', () => countReservations(r)).finally(() => {
      scanning = undefined;
    });
    return scanning;
  };
  const reservations = new Gauge({
    name: 'flashsale_reservations_outstanding',
    help: `Accepted orders not yet persisted: entries of every ${RESERVATION_HASHES} hash (bounded SCAN on scrape)`,
    registers: [registry],
    async collect() {
      const r = await scan();
      this.set(r ? r.entries : Number.NaN);
    },
  });
  new Gauge({
    name: 'flashsale_reservations_scan_complete',
    help: '1 when the reservation scan covered the whole keyspace, 0 when it stopped at its bounds (outstanding is then a lower bound)',
    registers: [registry],
    async collect() {
      const r = await scan();
      this.set(r ? (r.complete ? 1 : 0) : Number.NaN);
    },
  });
  return {
    reservations,
    /** The Redis whose reservation hashes flashsale_reservations_outstanding counts. */
    watchReservations(r: RedisClient): void {
      redis = r;
    },
  };
}
