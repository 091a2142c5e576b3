// The waiting room's public face for the composition root: one factory that builds it from the
// config and what it reads (Redis, Redis' clock, the catalog's stock).
import type { WaitingRoomSection } from '../config/load.ts';
import type { Catalog } from '../inventory/catalog.ts';
import { availableStock } from '../inventory/sale.ts';
import type { RedisClient } from '../redis/connection.ts';
import { WaitingRoom } from './room.ts';
import { TicketSigner } from './ticket.ts';

export { InvalidTicketError, type Place, QueuedError } from './errors.ts';
export type { Arrival, CapacitySignals } from './room.ts';
export { WaitingRoom } from './room.ts';
export { TicketSigner } from './ticket.ts';

export interface WaitingRoomDeps {
  redis: RedisClient;
  catalog: Catalog;
  /** Redis' clock as estimated in this process (RedisClock.now). */
  now: () => number;
}

/**
 * The waiting room (start it with the admission control whose capacity it hands out), or undefined
 * when WAITING_ROOM=off: orders beyond capacity are then answered 429 busy.
 */
export function createWaitingRoom(
  config: WaitingRoomSection,
  { redis, catalog, now }: WaitingRoomDeps,
): WaitingRoom | undefined {
  if (!config.enabled) return undefined;
  return new WaitingRoom({
    redis,
    now,
    signer: new TicketSigner(config.secret),
    soldOut: (productId) => catalog.isSoldOut(productId),
    available: async (productId) => {
      const sale = await catalog.get(productId);
      return sale ? availableStock(redis, sale) : 0;
    },
  });
}
