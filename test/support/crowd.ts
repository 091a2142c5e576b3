// A stand-in for another API process's waiting room, on the test's clock and capacity: it fills a
// product's line with a crowd, so that the service under test queues (or holds) every newcomer.
import { until } from '../../harness/async.ts';
import { BASE_SERVICE_ENV, call } from '../../harness/service.ts';
import type { RedisClient } from '../../src/redis/connection.ts';
import { TicketSigner, WaitingRoom } from '../../src/waiting-room/index.ts';

/**
 * Buyers a stand-in process puts in a line: so many that the service's own idle capacity (it offers
 * about a tenth of its limit per tick) cannot drain the line while a test looks at it.
 */
export const LONG_LINE = 2_000_000;

/** A stand-in for one API process's admission control: the capacity a test hands out. */
export class Capacity {
  completed = 0;
  limit = 0;
  running = 0;
}

/** A waiting room as an API process runs it, on the test's clock and capacity. */
export function standInRoom(redis: RedisClient, now: { ms: number }, available = 100) {
  const capacity = new Capacity();
  const room = new WaitingRoom({
    redis,
    now: () => now.ms,
    signer: new TicketSigner(BASE_SERVICE_ENV.QUEUE_SECRET as string),
    available: async () => available,
    soldOut: () => false,
  });
  room.start(capacity);
  return { room, capacity };
}

/**
 * Another API process whose line for `productId` holds `buyers`, once the service at `url` sees it.
 * Pass the whole line (capacity.completed += 2 * buyers; room.tick()) to let the service's buyers in.
 */
export async function crowd(redis: RedisClient, url: string, productId: string, buyers = LONG_LINE) {
  const now = { ms: Date.now() };
  const other = standInRoom(redis, now);
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
