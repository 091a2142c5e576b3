// Replica health metrics (REDIS_WAIT_REPLICAS): masters short of replicas, the units stranded on them
// as orders last found, and orders withdrawn because their replication was not confirmed in time.

import { Counter, Gauge, type Registry } from 'prom-client';

export function replicaMetrics(registry: Registry) {
  /** Units last found stranded, per product (kept here only: no product label). */
  const stranded = new Map<string, number>();
  const shortMasters = new Gauge({
    name: 'flashsale_redis_masters_short_of_replicas',
    help: 'Redis masters with fewer live replicas than REDIS_WAIT_REPLICAS: orders skip their shards until a replica is back',
    registers: [registry],
  });
  const unitsStranded = new Gauge({
    name: 'flashsale_units_stranded',
    help: 'Units on shards of masters short of replicas, as orders last found them (answered 503 unavailable meanwhile); 0 once every master has its replicas',
    registers: [registry],
    collect() {
      this.set([...stranded.values()].reduce((a, b) => a + b, 0));
    },
  });
  shortMasters.set(0);
  return {
    shortMasters,
    unitsStranded,
    ordersWithdrawn: new Counter({
      name: 'flashsale_orders_withdrawn_total',
      help: 'Orders withdrawn because their replicas did not confirm them in time (answered 503 unavailable; nothing sold)',
      registers: [registry],
    }),
    /** ReplicaWait's health hook: the masters short of replicas now. */
    observeShortMasters(short: readonly string[]): void {
      shortMasters.set(short.length);
      if (short.length === 0) stranded.clear();
    },
    /** StockReserver's onStranded hook. */
    observeStranded(productId: string, units: number): void {
      stranded.set(productId, units);
    },
  };
}
