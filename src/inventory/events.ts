// Sale change announcements between processes: every admin change publishes one, and every API
// process drops its cached shard list and sold-out flag for that product when it hears it (also when
// units of expired or cancelled orders come back on sale: `returned`).
import { publish, type RedisClient } from '../redis/connection.ts';
import { saleEventsChannel } from './keys.ts';

export interface SaleEvent {
  productId: string;
  kind: 'created' | 'replaced' | 'restocked' | 'resharded' | 'returned';
  generation: number;
}

export async function publishSaleEvent(redis: RedisClient, event: SaleEvent): Promise<void> {
  await publish(redis, saleEventsChannel(event.productId), JSON.stringify(event));
}

export function parseSaleEvent(message: string): SaleEvent | null {
  try {
    const e = JSON.parse(message) as Partial<SaleEvent>;
    return typeof e.productId === 'string' ? (e as SaleEvent) : null;
  } catch {
    return null;
  }
}
