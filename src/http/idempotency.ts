// Idempotency-Key for POST /api/orders: the first request with a key decides the answer; any retry
// with the same key and body (concurrent or later, for 24 h) gets the same status and body and
// creates nothing; the same key with another body is refused. Transient answers (429, 503) are not
// remembered, so a retry after them really retries.
import { createHash } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Redis } from 'ioredis';
import { idempotencyKey } from '../inventory/keys.ts';
import { IdempotencyKeyReusedError, RequestInProgressError } from '../orders/errors.ts';

export interface Answer {
  status: number;
  body: Record<string, unknown>;
  headers?: Record<string, string>;
}

interface Stored {
  fingerprint: string;
  answer?: Answer;
}

const TTL_SECONDS = 24 * 60 * 60;
/** How long a retry waits for the first request with its key to finish. */
const WAIT_FOR_FIRST_MS = 5000;

export function fingerprint(value: unknown): string {
  return createHash('sha256').update(JSON.stringify(value)).digest('hex');
}

export async function idempotent(
  redis: Redis,
  key: string,
  print: string,
  run: () => Promise<Answer>,
): Promise<Answer> {
  const k = idempotencyKey(key);
  const claimed = await redis.set(
    k,
    JSON.stringify({ fingerprint: print } satisfies Stored),
    'EX',
    TTL_SECONDS,
    'NX',
  );
  if (claimed === 'OK') {
    let answer: Answer;
    try {
      answer = await run();
    } catch (err) {
      await redis.del(k).catch(() => {});
      throw err;
    }
    if (answer.status === 429 || answer.status >= 500) await redis.del(k);
    else await redis.set(k, JSON.stringify({ fingerprint: print, answer } satisfies Stored), 'KEEPTTL');
    return answer;
  }
  const deadline = Date.now() + WAIT_FOR_FIRST_MS;
  for (;;) {
    const raw = await redis.get(k);
    // The first request gave up (transient failure): this one takes its place.
    if (raw === null) return idempotent(redis, key, print, run);
    const stored = JSON.parse(raw) as Stored;
    if (stored.fingerprint !== print) throw new IdempotencyKeyReusedError();
    if (stored.answer) return stored.answer;
    if (Date.now() > deadline) throw new RequestInProgressError();
    await sleep(10);
  }
}
