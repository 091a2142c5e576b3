// The waiting line's one Redis command: report this process's arrivals and spare capacity, read the
// line back (sync.lua), as a typed script call.
import type { RedisClient } from '../redis/connection.ts';
import { replyInt, typedScript } from '../redis/lua.ts';
import { lineKey } from './keys.ts';
import type { LineView } from './line.ts';

const SYNC = typedScript({
  name: 'flashsaleQueueSync',
  file: new URL('./scripts/sync.lua', import.meta.url),
  keys: ['line'],
  args: ['arrivals', 'advance', 'ttlSeconds'],
  parse: parseView,
});

/** A line is forgotten this long after the last process reported to it. */
const LINE_TTL_SECONDS = 3600;

export function syncLine(
  redis: RedisClient,
  productId: string,
  arrivals: string,
  advance: number,
): Promise<LineView | undefined> {
  return SYNC.run(redis, {
    line: lineKey(productId),
    arrivals,
    advance: Math.max(0, Math.floor(advance)),
    ttlSeconds: LINE_TTL_SECONDS,
  });
}

function parseView(reply: unknown): LineView | undefined {
  if (!Array.isArray(reply)) throw new TypeError(`expected an array reply, got ${String(reply)}`);
  if (reply.length === 0) return undefined;
  const [cur, used, rate, passed, ...rest] = reply.map(replyInt);
  const buckets: number[] = [];
  const counts: number[] = [];
  for (let i = 0; i + 1 < rest.length; i += 2) {
    buckets.push(rest[i] as number);
    counts.push(rest[i + 1] as number);
  }
  return { cur: cur ?? -1, used: used ?? 0, rate: (rate ?? 0) / 1000, passed: passed ?? 0, buckets, counts };
}
