// How the routes show a sale: its window as ISO 8601 times, each only when set.
import type { SaleWindow } from '../../inventory/sale.ts';

export function windowView(w: SaleWindow): { startsAt?: string; endsAt?: string } {
  return {
    ...(w.startsAt === null ? {} : { startsAt: new Date(w.startsAt).toISOString() }),
    ...(w.endsAt === null ? {} : { endsAt: new Date(w.endsAt).toISOString() }),
  };
}
