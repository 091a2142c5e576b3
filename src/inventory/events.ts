// Sale change announcements between processes: every admin change publishes one, and every API
// process drops its cached shard list and sold-out flag for that product when it hears it.
import type { Redis } from 'ioredis';
import { SALE_EVENTS_CHANNEL } from './keys.ts';

export interface SaleEvent {
  productId: string;
  kind: 'created' | 'replaced' | 'restocked' | 'resharded';
  generation: number;
}

export async function publishSaleEvent(redis: Redis, event: SaleEvent): Promise<void> {
  await redis.publish(SALE_EVENTS_CHANNEL, JSON.stringify(event));
}

export function parseSaleEvent(message: string): SaleEvent | null {
  try {
    const e = JSON.parse(message) as Partial<SaleEvent>;
    return typeof e.productId === 'string' ? (e as SaleEvent) : null;
  } catch {
    return null;
  }
}
