// Whole-database snapshots of a private Redis for "changes nothing" checks: type, TTL or not, value
// (DUMP; hashes and sets by sorted contents, as their DUMP order changes on mere reads).
import type { Redis } from 'ioredis';

export interface KeyState {
  type: string;
  /** True when the key has a TTL (its remaining time is not compared: it ticks). */
  expires: boolean;
  /** The value: DUMP in hex, or for hashes and sets their sorted contents as JSON. */
  dump: string;
}

export type RedisSnapshot = Map<string, KeyState>;

export interface SnapshotOptions {
  /** Keys to leave out (e.g. lock metadata that a refused admin request may legitimately touch). */
  exclude?: (key: string) => boolean;
}

async function scanAll(client: Redis): Promise<string[]> {
  const keys: string[] = [];
  let cursor = '0';
  do {
    const [next, batch] = await client.scan(cursor, 'COUNT', 1000);
    keys.push(...batch);
    cursor = next;
  } while (cursor !== '0');
  return keys;
}

/**
 * Keys that live on their own clock, whatever the requests under test do, so they are never part of
 * what a request changed: BullMQ's stalled-job check timer (a running writer sets it), and the
 * unlock latches every lock release leaves for 10 s (a background release, such as the sweeper's,
 * may leave one at any moment, and each expires mid-test).
 */
const isTimer = (key: string) => key.endsWith(':stalled-check') || key.startsWith('redisson_unlock_latch:');

export async function snapshotRedis(client: Redis, options: SnapshotOptions = {}): Promise<RedisSnapshot> {
  const keys = (await scanAll(client)).filter((k) => !isTimer(k) && !options.exclude?.(k)).sort();
  const snapshot: RedisSnapshot = new Map();
  for (let i = 0; i < keys.length; i += 500) {
    const chunk = keys.slice(i, i + 500);
    const p = client.pipeline();
    for (const key of chunk) p.type(key).pttl(key).dumpBuffer(key);
    const replies = (await p.exec()) ?? [];
    chunk.forEach((key, j) => {
      const [type, pttl, dump] = [0, 1, 2].map((n) => {
        const [err, value] = replies[j * 3 + n] ?? [null, null];
        if (err) throw err;
        return value;
      });
      // A key that expired between SCAN and TYPE is gone: leave it out.
      if (type === 'none') return;
      snapshot.set(key, {
        type: String(type),
        expires: Number(pttl) >= 0,
        dump: dump ? (dump as Buffer).toString('hex') : '',
      });
    });
  }
  const unordered = [...snapshot].filter(([, s]) => s.type === 'hash' || s.type === 'set');
  const p = client.pipeline();
  for (const [key, s] of unordered) {
    if (s.type === 'hash') p.hgetall(key);
    else p.smembers(key);
  }
  const contents = (await p.exec()) ?? [];
  unordered.forEach(([, s], i) => {
    const [err, value] = contents[i] ?? [null, null];
    if (err) throw err;
    const sorted = Array.isArray(value) ? [...value].sort() : Object.entries(value ?? {}).sort();
    s.dump = JSON.stringify(sorted);
  });
  return snapshot;
}

/** Human-readable differences (added, removed, changed keys); empty when the snapshots are equal. */
export function diffSnapshots(before: RedisSnapshot, after: RedisSnapshot): string[] {
  const out: string[] = [];
  for (const [key, was] of before) {
    const now = after.get(key);
    if (!now) out.push(`removed ${key} (${was.type})`);
    else if (now.type !== was.type) out.push(`retyped ${key}: ${was.type} -> ${now.type}`);
    else if (now.dump !== was.dump) out.push(`changed ${key} (${was.type})`);
    else if (now.expires !== was.expires) out.push(`ttl ${was.expires ? 'removed from' : 'added to'} ${key}`);
  }
  for (const [key, now] of after) if (!before.has(key)) out.push(`added ${key} (${now.type})`);
  return out;
}

/** INFO commandstats as {command: calls}, e.g. {evalsha: 12, get: 40}. */
export async function commandCalls(client: Redis): Promise<Record<string, number>> {
  const info = await client.info('commandstats');
  const calls: Record<string, number> = {};
  for (const line of info.split('\n')) {
    const m = /^cmdstat_([^:]+):calls=(\d+)/.exec(line.trim());
    if (m?.[1] && m[2]) calls[m[1]] = Number(m[2]);
  }
  return calls;
}
