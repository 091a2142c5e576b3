// A stand-in for other API processes of a deployment: a waiting room on the test's clock and capacity
// whose line a test fills (a crowd ahead of the service's own buyers) and moves on by hand.
import type { Redis } from 'ioredis';
import { until } from '../../harness/async.ts';
import { call } from '../../harness/service.ts';
import { TicketSigner, WaitingRoom } from '../../src/waiting-room/index.ts';

/** A stand-in for one API process's admission control: the capacity a test hands out. */
export class Capacity {
  completed = 0;
  limit = 0;
  running = 0;
}

export interface StandInRoom {
  room: WaitingRoom;
  capacity: Capacity;
}

/** A waiting room as an API process runs it, on the test's clock and capacity. */
export function standInRoom(redis: Redis, secret: string, now: { ms: number }, available = 100): StandInRoom {
  const capacity = new Capacity();
  const room = new WaitingRoom({
    redis,
    now: () => now.ms,
    signer: new TicketSigner(secret),
    available: async () => available,
    soldOut: () => false,
  });
  room.start(capacity);
  return { room, capacity };
}

/**
 * Another API process whose line holds `buyers` (arrived now): the service's own line turns active
 * from it. Resolves once the service at `url` shows at least half of them waiting.
 */
export async function crowd(
  redis: Redis,
  secret: string,
  url: string,
  productId: string,
  buyers: number,
): Promise<StandInRoom> {
  const now = { ms: Date.now() };
  const other = standInRoom(redis, secret, now);
  const line = await other.room.line(productId);
  for (let i = 0; i < buyers; i++) line.arrive({ userId: `crowd-${i}`, firstSeen: now.ms });
  await other.room.tick();
  // The service reads its line once a tick: wait until it shows the crowd.
  await until('the service to see the line', async () => {
    const product = await call(url, 'GET', `/api/products/${productId}`);
    // The service lets some in meanwhile: its idle slots move the line on too.
    return ((product.body.queue as { waiting?: number } | undefined)?.waiting ?? 0) >= buyers / 2;
  });
  return other;
}

/** The stand-in process serves `buyers` of its line (it reports them as orders completed, at its next tick). */
export async function advance(other: StandInRoom, productId: string, buyers: number): Promise<void> {
  await other.room.line(productId); // a line unused for a while is dropped: this one is in use
  other.capacity.completed += buyers;
  await other.room.tick();
}
