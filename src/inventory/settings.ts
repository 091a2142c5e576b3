// A sale's settings as every API answer shows them (PUT and GET /admin/products/:id, the public
// product view, the dashboard): ISO 8601 times, each only when set; null for no per-user limit.
import type { Sale, SaleWindow } from './sale.ts';

export interface SaleSettings {
  /** Most units one buyer may hold; null: no limit. */
  perUserLimit: number | null;
  /** When orders open and close (ISO 8601, UTC); absent: no bound. */
  startsAt?: string;
  endsAt?: string;
  /** Seconds an order has to be paid; absent: no payment needed. */
  paymentTimeoutSec?: number;
}

export function windowView(w: SaleWindow): { startsAt?: string; endsAt?: string } {
  return {
    ...(w.startsAt === null ? {} : { startsAt: new Date(w.startsAt).toISOString() }),
    ...(w.endsAt === null ? {} : { endsAt: new Date(w.endsAt).toISOString() }),
  };
}

export function settingsView(sale: Sale): SaleSettings {
  return {
    perUserLimit: sale.perUserLimit > 0 ? sale.perUserLimit : null,
    ...windowView(sale.window),
    ...(sale.paymentTimeoutSec > 0 && { paymentTimeoutSec: sale.paymentTimeoutSec }),
  };
}
