// Idempotency-Key for POST /api/orders: the first request with a key decides the answer; any retry
// with the same key and body (concurrent or later, for 24 h) gets the same status and body and
// creates nothing; the same key with another body is refused. Only decisions are remembered (an
// order, or a 409 sold out / over the limit): an answer that changed nothing (404 unknown product)
// or a transient one (429, 503) is not, so a retry after it really retries.
//
// A request claims the key for one order attempt (attempt.ts): the claim names the attempt's ticket
// and deadline, and only that attempt may store the answer or give the claim up (compare-and-set /
// compare-and-delete in one script), so every step is safe to run twice — ioredis sends a command
// again after a reconnect when its reply was lost — and a late clean-up never drops another's claim.
//
// A claim is never left to time out blindly. If its request died (API killed) or lost its reply
// (connection cut mid-reservation), a retry waits until the claim's deadline has passed in Redis'
// clock — from then on nothing that attempt sent can take effect — and then looks for its ticket:
// found, the order is the key's answer (the same orderId the first request would have answered);
// not found, the claim is dropped and the retry places the order itself. Either way exactly one order.
import { createHash } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Redis } from 'ioredis';
import { idempotencyKey } from '../inventory/keys.ts';
import { type Attempt, CLOCK_SKEW_MARGIN_MS } from '../orders/attempt.ts';
import { IdempotencyKeyReusedError, OutcomeUnknownError, RequestInProgressError } from '../orders/errors.ts';
import { eventually } from '../redis/eventually.ts';
import { defineScripts, luaScript, replyInt } from '../redis/lua.ts';

export interface Answer {
  status: number;
  body: Record<string, unknown>;
  headers?: Record<string, string>;
}

/** The order operation behind a key. */
export interface KeyedOrder {
  newAttempt(): Attempt;
  /** Places the order as `attempt`. Throws OutcomeUnknownError when it cannot tell whether it did. */
  run(attempt: Attempt): Promise<Answer>;
  /** Only once `attempt` can no longer take effect: its answer if it placed an order, else null. */
  resolve(attempt: Attempt): Promise<Answer | null>;
}

interface Stored {
  fingerprint: string;
  /** Ticket of the attempt holding the claim. */
  attempt: string;
  /** Server time (ms) after which that attempt can no longer place an order. */
  deadline: number;
  answer?: Answer;
}

const TTL_SECONDS = 24 * 60 * 60;
/** Longest a retry waits for the request that holds its key (it normally ends by its deadline). */
const MAX_WAIT_MS = 15_000;

const SCRIPTS = [
  luaScript('flashsaleIdempotencyClaim', 1, new URL('./scripts/idempotency-claim.lua', import.meta.url)),
  luaScript('flashsaleIdempotencySettle', 1, new URL('./scripts/idempotency-settle.lua', import.meta.url)),
];

type IdemRedis = Redis & {
  flashsaleIdempotencyClaim(key: string, record: string, ttl: number): Promise<unknown>;
  flashsaleIdempotencySettle(key: string, attempt: string, record: string): Promise<unknown>;
};

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
  return { claimed: replyInt(reply[0]) === 1, raw: reply[1], now: replyInt(reply[2]) };
}

export async function idempotent(
  redis: Redis,
  key: string,
  print: string,
  order: KeyedOrder,
): Promise<Answer> {
  defineScripts(redis, SCRIPTS);
  const r = redis as IdemRedis;
  const k = idempotencyKey(key);
  const record = (attempt: Attempt, answer?: Answer) =>
    JSON.stringify({
      fingerprint: print,
      attempt: attempt.ticket,
      deadline: attempt.deadline,
      answer,
    } satisfies Stored);
  const giveUpAt = Date.now() + MAX_WAIT_MS;
  for (;;) {
    const attempt = order.newAttempt();
    const { claimed, raw, now } = parseClaimReply(
      await r.flashsaleIdempotencyClaim(k, record(attempt), TTL_SECONDS),
    );
    const stored = parseStored(raw);
    // Our own claim, executed once and sent again after a reconnect, answers "taken" the second time.
    if (claimed || stored?.attempt === attempt.ticket) return runClaimed(r, k, attempt, order, record);
    if (!stored) throw new RequestInProgressError();
    if (stored.fingerprint !== print) throw new IdempotencyKeyReusedError();
    if (stored.answer) return stored.answer;
    const finalAt = stored.deadline + CLOCK_SKEW_MARGIN_MS;
    if (now > finalAt) {
      // The holder's attempt is over in Redis' clock, whether its request is alive or not: settle
      // the key with what it did, then go round (and find that answer, or claim the freed key).
      // Its deadline bounds every reservation it sent, so it is its fence too.
      const holder: Attempt = { ticket: stored.attempt, deadline: stored.deadline, fence: stored.deadline };
      const answer = await order.resolve(holder);
      await r.flashsaleIdempotencySettle(k, holder.ticket, answer ? record(holder, answer) : '');
      continue;
    }
    if (Date.now() > giveUpAt) throw new RequestInProgressError();
    await sleep(Math.max(5, Math.min(50, finalAt - now + 1)));
  }
}

async function runClaimed(
  r: IdemRedis,
  k: string,
  attempt: Attempt,
  order: KeyedOrder,
  record: (attempt: Attempt, answer?: Answer) => string,
): Promise<Answer> {
  let answer: Answer;
  try {
    answer = await order.run(attempt);
  } catch (err) {
    // Unknown outcome: the claim stays, and a retry resolves it once the attempt's deadline passed.
    if (!(err instanceof OutcomeUnknownError)) await settle(r, k, attempt, '');
    throw err;
  }
  await settle(r, k, attempt, isDecision(answer) ? record(attempt, answer) : '');
  return answer;
}

/** Stores the answer (record) or releases the claim (record ''); retried in the background while Redis is unreachable. */
function settle(r: IdemRedis, k: string, attempt: Attempt, record: string): Promise<void> {
  return eventually(() => r.flashsaleIdempotencySettle(k, attempt.ticket, record));
}
