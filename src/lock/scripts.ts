// The lock's Lua scripts and the argument lists they take, shared by the single-call path
// (LockClient) and by callers that pipeline an acquire and release around their own guarded commands.
import type { ChainableCommander, Redis } from 'ioredis';
import { defineScripts, luaScript, replyInt } from '../redis/lua.ts';
import { lockKeys, wakeChannelPrefix } from './keys.ts';

export const LOCK_SCRIPTS = [
  luaScript('flashsaleLockAcquire', 7, new URL('./scripts/acquire.lua', import.meta.url)),
  luaScript('flashsaleLockRelease', 8, new URL('./scripts/release.lua', import.meta.url), [
    new URL('./scripts/latch.lua', import.meta.url),
  ]),
  luaScript('flashsaleLockRenew', 2, new URL('./scripts/renew.lua', import.meta.url)),
] as const;

type Arg = string | number;
type LockCommands<R> = {
  flashsaleLockAcquire(...args: Arg[]): R;
  flashsaleLockRelease(...args: Arg[]): R;
  flashsaleLockRenew(...args: Arg[]): R;
};
export type LockRedis = Redis & LockCommands<Promise<unknown>>;
export type LockPipeline = ChainableCommander & LockCommands<ChainableCommander>;

export function withLockScripts(redis: Redis): LockRedis {
  defineScripts(redis, LOCK_SCRIPTS);
  return redis as LockRedis;
}

export type AcquireMode = 'try' | 'wait' | 'retry';
export type ReleaseMode = 'release' | 'cancel' | 'force';

export interface AcquireRequest {
  name: string;
  owner: string;
  leaseMs: number;
  mode: AcquireMode;
  clientId: string;
  /** How long the caller stays eligible for a hand-off (its remaining wait). */
  eligibleMs: number;
  /** Identifies this wait in the queue (unique per acquire call; unused in 'try' mode). */
  waitId?: string;
  /** Request id of the release pipelined right after this acquire (runGuarded), if any. */
  pairedRelease?: string;
}

/** Arguments of renew.lua: extend `owner`'s hold on `name` to leaseMs. */
export function renewArgs(name: string, leaseMs: number, owner: string): Arg[] {
  return [name, lockKeys(name).ours, leaseMs, owner];
}

export function acquireArgs(r: AcquireRequest): Arg[] {
  const k = lockKeys(r.name);
  return [
    k.lock,
    k.token,
    k.queue,
    k.waiters,
    k.handed,
    k.ours,
    k.latch(r.pairedRelease ?? ''),
    r.leaseMs,
    r.owner,
    r.mode,
    r.clientId,
    Math.ceil(r.eligibleMs),
    r.waitId ?? '',
    r.pairedRelease === undefined ? '' : '1',
  ];
}

export function releaseArgs(
  name: string,
  owner: string,
  leaseMs: number,
  mode: ReleaseMode,
  requestId: string,
  /** The wait the hold was handed to ('' if it was not a hand-off); required for 'cancel'. */
  waitId = '',
): Arg[] {
  const k = lockKeys(name);
  return [
    k.lock,
    k.channel,
    k.token,
    k.queue,
    k.waiters,
    k.latch(requestId),
    k.handed,
    k.ours,
    owner,
    leaseMs,
    mode,
    wakeChannelPrefix,
    UNLOCK_LATCH_MS,
    name,
    waitId,
  ];
}

/** Long enough to cover ioredis re-sending an unanswered command after a reconnect. */
const UNLOCK_LATCH_MS = 10_000;

export type AcquireReply =
  | { acquired: true; token: number; holdCount: number }
  /** handOffExpected: the holder is one of ours, so its release will hand the lock to our queue. */
  | { acquired: false; pttl: number; handOffExpected: boolean };

export function parseAcquireReply(reply: unknown): AcquireReply {
  if (Array.isArray(reply)) {
    const first = replyInt(reply[0]);
    // Tokens start at 1: {0, pttl} is "held by one of ours".
    if (first === 0) return { acquired: false, pttl: replyInt(reply[1]), handOffExpected: true };
    return { acquired: true, token: first, holdCount: replyInt(reply[1]) };
  }
  return { acquired: false, pttl: replyInt(reply), handOffExpected: false };
}

/** null: not held by the owner; 0: holds remain; 1: released (freed or handed to the next waiter). */
export function parseReleaseReply(reply: unknown): 0 | 1 | null {
  if (reply === null || reply === undefined) return null;
  return replyInt(reply) === 0 ? 0 : 1;
}
