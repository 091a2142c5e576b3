// The lock's Lua scripts and the argument lists they take, shared by the single-call path
// (LockClient) and by callers that pipeline an acquire and release around their own guarded commands.
import type { ChainableCommander, Redis } from 'ioredis';
import { defineScripts, luaScript, replyInt } from '../redis/lua.ts';
import { lockKeys, wakeChannelPrefix } from './keys.ts';

export const LOCK_SCRIPTS = [
  luaScript('flashsaleLockAcquire', 4, new URL('./scripts/acquire.lua', import.meta.url)),
  luaScript('flashsaleLockRelease', 6, new URL('./scripts/release.lua', import.meta.url)),
  luaScript('flashsaleLockRenew', 1, new URL('./scripts/renew.lua', import.meta.url)),
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
}

export function acquireArgs(r: AcquireRequest): Arg[] {
  const k = lockKeys(r.name);
  return [
    k.lock,
    k.token,
    k.queue,
    k.waiters,
    r.leaseMs,
    r.owner,
    r.mode,
    r.clientId,
    Math.ceil(r.eligibleMs),
  ];
}

export function releaseArgs(
  name: string,
  owner: string,
  leaseMs: number,
  mode: ReleaseMode,
  requestId: string,
): Arg[] {
  const k = lockKeys(name);
  return [
    k.lock,
    k.channel,
    k.token,
    k.queue,
    k.waiters,
    k.latch(requestId),
    owner,
    leaseMs,
    mode,
    wakeChannelPrefix,
    UNLOCK_LATCH_MS,
    name,
  ];
}

/** Long enough to cover ioredis re-sending an unanswered command after a reconnect. */
const UNLOCK_LATCH_MS = 10_000;

export type AcquireReply =
  | { acquired: true; token: number; holdCount: number }
  | { acquired: false; pttl: number };

export function parseAcquireReply(reply: unknown): AcquireReply {
  if (Array.isArray(reply)) {
    return { acquired: true, token: replyInt(reply[0]), holdCount: replyInt(reply[1]) };
  }
  return { acquired: false, pttl: replyInt(reply) };
}

/** null: not held by the owner; 0: holds remain; 1: released (freed or handed to the next waiter). */
export function parseReleaseReply(reply: unknown): 0 | 1 | null {
  if (reply === null || reply === undefined) return null;
  return replyInt(reply) === 0 ? 0 : 1;
}
