// Idempotency-Key for placing an order, per buyer: the first request with a key decides its outcome;
// retries with the same key and body (concurrent or later, for 24 h) get that outcome and create nothing.
import { createHash } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import type { RedisClient } from '../redis/connection.ts';
import { eventually } from '../redis/eventually.ts';
import { replyInt, typedScript } from '../redis/lua.ts';
import { type Attempt, CLOCK_SKEW_MARGIN_MS } from './attempt.ts';
import { IdempotencyKeyReusedError, OutcomeUnknownError, RequestInProgressError } from './errors.ts';
import { idempotencyKey } from './keys.ts';
import { IdempotencyClaimReply } from './replies.ts';

/**
 * The order operation behind a key; `T` is the outcome a key remembers (JSON), e.g. the order placed
 * or a refusal the order path decided (sold out, over the limit).
 */
export interface KeyedOrder<T> {
  newAttempt(): Attempt;
  /**
   * Places the order as `attempt` and resolves with the outcome to remember. Throws when nothing was
   * decided (busy, unavailable: the claim is given up, a retry really retries), or OutcomeUnknownError
   * when it cannot tell whether it placed the order (the claim stays for a retry to settle).
   */
  run(attempt: Attempt): Promise<T>;
  /** Only once `attempt` can no longer take effect: its outcome if it placed an order, else null. */
  resolve(attempt: Attempt): Promise<T | null>;
}

interface Stored<T> {
  fingerprint: string;
  /** Ticket of the attempt holding the claim. */
  attempt: string;
  /** Server time (ms) after which that attempt can no longer place an order. */
  deadline: number;
  answer?: T;
}

const TTL_SECONDS = 24 * 60 * 60;
/** Longest a retry waits for the request that holds its key (it normally ends by its deadline). */
const MAX_WAIT_MS = 15_000;

/** idempotency-claim.lua: takes the key, or answers the record of whoever holds it, with Redis' clock. */
export const IDEMPOTENCY_CLAIM = typedScript({
  name: 'flashsaleIdempotencyClaim',
  file: new URL('./scripts/idempotency-claim.lua', import.meta.url),
  keys: ['key'],
  args: ['record', 'ttlSeconds'],
  parse: parseClaimReply,
});
/** idempotency-settle.lua: stores the answer or gives the claim up, only for the attempt holding it. */
export const IDEMPOTENCY_SETTLE = typedScript({
  name: 'flashsaleIdempotencySettle',
  file: new URL('./scripts/idempotency-settle.lua', import.meta.url),
  keys: ['key'],
  args: ['attempt', 'record'],
  parse: replyInt,
});

/** True when the buyer's key holds a record (an order, or a claim in progress); reads only. */
export async function keyInUse(redis: RedisClient, buyer: string, key: string): Promise<boolean> {
  return (await redis.exists(idempotencyKey(buyer, key))) === 1;
}

export function fingerprint(value: unknown): string {
  return createHash('sha256').update(JSON.stringify(value)).digest('hex');
}

function parseStored<T>(raw: string): Stored<T> | null {
  try {
    const v = JSON.parse(raw) as Stored<T>;
    return typeof v === 'object' &&
      v !== null &&
      typeof v.fingerprint === 'string' &&
      typeof v.attempt === 'string' &&
      typeof v.deadline === 'number'
      ? v
      : null;
  } catch {
    return null;
  }
}

function parseClaimReply(reply: unknown): { claimed: boolean; raw: string; now: number } {
  if (!Array.isArray(reply) || typeof reply[1] !== 'string') {
    throw new TypeError(`unexpected claim reply ${JSON.stringify(reply)}`);
  }
  return {
    claimed: replyInt(reply[0]) === IdempotencyClaimReply.claimed,
    raw: reply[1],
    now: replyInt(reply[2]),
  };
}

/**
 * Runs `order` once per key of a buyer (keys are scoped per buyer: another buyer's key is another key): the first request's outcome is every retry's. A request claims the key
 * for one order attempt (attempt.ts); only that attempt may store the outcome or give the claim up
 * (compare-and-set in one script), so every step is safe to run twice. A claim whose request died or
 * lost its reply is settled by a retry once the claim's deadline has passed in Redis' clock: it looks
 * for the attempt's order and remembers it, or drops the claim and places anew.
 */
export async function idempotent<T>(
  redis: RedisClient,
  buyer: string,
  key: string,
  print: string,
  order: KeyedOrder<T>,
): Promise<T> {
  const k = idempotencyKey(buyer, key);
  const record = (attempt: Attempt, answer?: T) =>
    JSON.stringify({
      fingerprint: print,
      attempt: attempt.ticket,
      deadline: attempt.deadline,
      answer,
    } satisfies Stored<T>);
  const giveUpAt = Date.now() + MAX_WAIT_MS;
  for (;;) {
    const attempt = order.newAttempt();
    const { claimed, raw, now } = await IDEMPOTENCY_CLAIM.run(redis, {
      key: k,
      record: record(attempt),
      ttlSeconds: TTL_SECONDS,
    });
    const stored = parseStored<T>(raw);
    // Our own claim, executed once and sent again after a reconnect, answers "taken" the second time.
    if (claimed || stored?.attempt === attempt.ticket) return runClaimed(redis, k, attempt, order, record);
    if (!stored) throw new RequestInProgressError();
    if (stored.fingerprint !== print) throw new IdempotencyKeyReusedError();
    if (stored.answer) return stored.answer;
    const finalAt = stored.deadline + CLOCK_SKEW_MARGIN_MS;
    if (now > finalAt) {
      // The holder's attempt is over in Redis' clock, whether its request is alive or not: settle
      // the key with what it did, then go round (and find that answer, or claim the freed key).
      const holder: Attempt = { ticket: stored.attempt, deadline: stored.deadline };
      const answer = await order.resolve(holder);
      await IDEMPOTENCY_SETTLE.run(redis, {
        key: k,
        attempt: holder.ticket,
        record: answer ? record(holder, answer) : '',
      });
      continue;
    }
    if (Date.now() > giveUpAt) throw new RequestInProgressError();
    await sleep(Math.max(5, Math.min(50, finalAt - now + 1)));
  }
}

async function runClaimed<T>(
  r: RedisClient,
  k: string,
  attempt: Attempt,
  order: KeyedOrder<T>,
  record: (attempt: Attempt, answer?: T) => string,
): Promise<T> {
  let answer: T;
  try {
    answer = await order.run(attempt);
  } catch (err) {
    // Unknown outcome: the claim stays, and a retry resolves it (finds the order) once the attempt's
    // deadline passed. Giving it up would let the retry the 503 asks for place a second order. Any
    // other error (a 503 unavailable included: a withdrawn order) sold nothing, so the key is freed.
    if (!(err instanceof OutcomeUnknownError)) await settle(r, k, attempt, '');
    throw err;
  }
  await settle(r, k, attempt, record(attempt, answer));
  return answer;
}

/** Stores the answer (record) or releases the claim (record ''); retried in the background while RedisClient is unreachable. */
function settle(r: RedisClient, k: string, attempt: Attempt, record: string): Promise<void> {
  return eventually(() => IDEMPOTENCY_SETTLE.run(r, { key: k, attempt: attempt.ticket, record }));
}
