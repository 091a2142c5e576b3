// Idempotency-Key for POST /api/orders: the first request with a key decides the answer; any retry
// with the same key and body (concurrent or later, for 24 h) gets the same status and body and
// creates nothing; the same key with another body is refused. Only decisions are remembered (an
// order, or a 409 sold out / over the limit): an answer that changed nothing (404 unknown product)
// or a transient one (429, 503) is not, so a retry after it really retries.
//
// Each request that claims a key does so as one attempt (a random id stored in the claim), and only
// that attempt may store the answer or give the claim up (compare-and-set / compare-and-delete in one
// script). That makes every step safe to run twice — ioredis sends a command again after a reconnect
// when its reply was lost — and a late clean-up can never drop a claim another request holds. When
// Redis is unreachable at the end of a request, the answer is still given (an order that exists is
// answered 202, not 503) and its storing or the claim's release is retried in the background, so a
// Redis blip does not leave the key "in progress" for 24 h.
import { createHash, randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Redis } from 'ioredis';
import { idempotencyKey } from '../inventory/keys.ts';
import { IdempotencyKeyReusedError, RequestInProgressError } from '../orders/errors.ts';
import { defineScripts, luaScript } from '../redis/lua.ts';

export interface Answer {
  status: number;
  body: Record<string, unknown>;
  headers?: Record<string, string>;
}

interface Stored {
  fingerprint: string;
  /** The attempt holding the claim (absent in records written before attempts existed). */
  attempt?: string;
  answer?: Answer;
}

const TTL_SECONDS = 24 * 60 * 60;
/** How long a retry waits for the first request with its key to finish. */
const WAIT_FOR_FIRST_MS = 5000;
/** How long storing an answer or releasing a claim is retried while Redis is unreachable. */
const SETTLE_RETRY_MS = 60_000;

const SETTLE = luaScript(
  'flashsaleIdempotencySettle',
  1,
  new URL('./scripts/idempotency-settle.lua', import.meta.url),
);

type SettleRedis = Redis & {
  flashsaleIdempotencySettle(key: string, attempt: string, record: string): Promise<unknown>;
};

function withSettle(redis: Redis): SettleRedis {
  defineScripts(redis, [SETTLE]);
  return redis as SettleRedis;
}

export function fingerprint(value: unknown): string {
  return createHash('sha256').update(JSON.stringify(value)).digest('hex');
}

/** Answers worth replaying: an order was placed, or the order path decided it cannot be. */
function isDecision(answer: Answer): boolean {
  return (answer.status >= 200 && answer.status < 300) || answer.status === 409;
}

function parseStored(raw: string): Stored | null {
  try {
    const v = JSON.parse(raw) as Stored;
    return typeof v === 'object' && v !== null && typeof v.fingerprint === 'string' ? v : null;
  } catch {
    return null;
  }
}

/**
 * Stores the answer (record) or releases the claim (record ''); tried once now, then in the
 * background while Redis is unreachable. Never throws.
 */
async function settle(redis: SettleRedis, k: string, attempt: string, record: string): Promise<void> {
  const once = () => redis.flashsaleIdempotencySettle(k, attempt, record);
  try {
    await once();
    return;
  } catch {
    // Redis unreachable (or the reply was lost): retry below, without holding up the answer.
  }
  void (async () => {
    const deadline = Date.now() + SETTLE_RETRY_MS;
    let pause = 100;
    while (Date.now() < deadline) {
      await sleep(pause, undefined, { ref: false });
      pause = Math.min(pause * 2, 2000);
      try {
        await once();
        return;
      } catch {
        // still unreachable
      }
    }
  })();
}

export async function idempotent(
  redis: Redis,
  key: string,
  print: string,
  run: () => Promise<Answer>,
): Promise<Answer> {
  const r = withSettle(redis);
  const k = idempotencyKey(key);
  const attempt = randomUUID();
  const claim = JSON.stringify({ fingerprint: print, attempt } satisfies Stored);
  let raw: string | null = null;
  let claimed = (await r.set(k, claim, 'EX', TTL_SECONDS, 'NX')) === 'OK';
  if (!claimed) {
    raw = await r.get(k);
    // Our own SET, executed once and sent again after a reconnect, answers "not set" the second time.
    claimed = raw !== null && parseStored(raw)?.attempt === attempt;
  }
  if (claimed) {
    let answer: Answer;
    try {
      answer = await run();
    } catch (err) {
      await settle(r, k, attempt, '');
      throw err;
    }
    const record = isDecision(answer)
      ? JSON.stringify({ fingerprint: print, attempt, answer } satisfies Stored)
      : '';
    await settle(r, k, attempt, record);
    return answer;
  }
  const deadline = Date.now() + WAIT_FOR_FIRST_MS;
  for (;;) {
    // The first request gave up (transient failure, or an answer not worth keeping): this one takes its place.
    if (raw === null) return idempotent(redis, key, print, run);
    const stored = parseStored(raw);
    if (stored && stored.fingerprint !== print) throw new IdempotencyKeyReusedError();
    if (stored?.answer) return stored.answer;
    if (Date.now() > deadline) throw new RequestInProgressError();
    await sleep(10);
    raw = await r.get(k);
  }
}
