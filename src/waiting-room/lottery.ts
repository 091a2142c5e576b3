// A sale's lottery window: buyers whose first request falls in its first N seconds (or before it
// opens) are let in in an order drawn from a seed, committed to by its SHA-256 before the opening.
import { createHash, randomBytes } from 'node:crypto';
import type { RedisClient } from '../redis/connection.ts';
import { drawKey } from './keys.ts';

/** A lottery window and its seed, as stored in `queue:{P}:draw`. */
export interface Draw {
  seed: string;
  /** SHA-256 (hex) of the seed: published before the opening, so the seed cannot be picked later. */
  seedSha256: string;
  opensAt: number;
  closesAt: number;
}

/** What GET /api/products/:id shows of a draw: the seed only once the window has closed. */
export interface DrawView {
  lotterySeconds: number;
  seedSha256: string;
  closesAt: string;
  seed?: string;
}

/** A draw outlives its sale's busiest day by far; a re-PUT without a lottery deletes it. */
const DRAW_TTL_SECONDS = 7 * 24 * 3600;

/** The draw's rank of a buyer in [0, 1): SHA-256 of "<seed>:<userId>", its first 48 bits. */
export function drawRank(seed: string, userId: string): number {
  const digest = createHash('sha256').update(`${seed}:${userId}`).digest();
  return digest.readUIntBE(0, 6) / 2 ** 48;
}

/**
 * The place a buyer takes in the line: its first request, or within a lottery window (or before it),
 * a time in the window by its drawn rank, so the line serves the window's buyers in draw order.
 */
export function placeInLine(draw: Draw | undefined, userId: string, firstSeen: number): number {
  if (!draw || firstSeen >= draw.closesAt) return firstSeen;
  return draw.opensAt + Math.floor(drawRank(draw.seed, userId) * (draw.closesAt - draw.opensAt));
}

/** Sets (a fresh seed) or removes a product's lottery window. */
export async function configureDraw(
  redis: RedisClient,
  productId: string,
  lotterySeconds: number,
  opensAt: number,
): Promise<Draw | undefined> {
  const key = drawKey(productId);
  if (lotterySeconds <= 0) {
    await redis.del(key);
    return undefined;
  }
  const seed = randomBytes(32).toString('hex');
  const seedSha256 = createHash('sha256').update(seed).digest('hex');
  const closesAt = opensAt + lotterySeconds * 1000;
  await redis.hset(key, { seed, seedSha256, opensAt, closesAt });
  await redis.expire(key, DRAW_TTL_SECONDS);
  return { seed, seedSha256, opensAt, closesAt };
}

export async function loadDraw(redis: RedisClient, productId: string): Promise<Draw | undefined> {
  const h = await redis.hgetall(drawKey(productId));
  if (!h.seed || !h.seedSha256) return undefined;
  return { seed: h.seed, seedSha256: h.seedSha256, opensAt: Number(h.opensAt), closesAt: Number(h.closesAt) };
}

export function drawView(draw: Draw, now: number): DrawView {
  return {
    lotterySeconds: Math.round((draw.closesAt - draw.opensAt) / 1000),
    seedSha256: draw.seedSha256,
    closesAt: new Date(draw.closesAt).toISOString(),
    ...(now >= draw.closesAt && { seed: draw.seed }),
  };
}
