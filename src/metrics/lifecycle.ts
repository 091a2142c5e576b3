// Order lifecycle metrics: the fates this process gave orders after they were placed (paid, expired,
// cancelled) and the units of unpaid orders it put back on sale.

import { Counter, type Registry } from 'prom-client';

export function lifecycleMetrics(registry: Registry) {
  return {
    orderFates: new Counter({
      name: 'flashsale_order_fates_total',
      help: 'Orders given their fate by this process: paid, expired (unpaid past the deadline) or cancelled by the buyer',
      labelNames: ['fate'] as const,
      registers: [registry],
    }),
    unitsReturned: new Counter({
      name: 'flashsale_units_returned_total',
      help: 'Units of expired or cancelled orders this process put back on sale (through a new shard generation)',
      registers: [registry],
    }),
  };
}
