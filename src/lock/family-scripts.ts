// Lua scripts of the fair, read-write and multi-master locks, with the argument lists they take. They
// share their waiter-queue code (scripts/queue.lua), the read-write ones their state code
// (scripts/rw-lib.lua) and the releases the unlock latch (scripts/latch.lua): each library is
// prepended to the script body at load time, so every script stays one self-contained EVAL.
import type { Redis } from 'ioredis';
import { defineScripts, type LuaScript, luaScript, replyInt } from '../redis/lua.ts';
import { fairKeys, redlockKeys, rwKeys, wakeChannelPrefix } from './keys.ts';
import type { AcquireMode, LockRedis, ReleaseMode } from './scripts.ts';

const file = (name: string) => new URL(`./scripts/${name}`, import.meta.url);

function withLibs(name: string, numberOfKeys: number, script: string, libs: string[]): LuaScript {
  return luaScript(name, numberOfKeys, file(script), libs.map(file));
}

export const FAMILY_SCRIPTS = [
  withLibs('flashsaleFairAcquire', 5, 'fair-acquire.lua', ['queue.lua']),
  withLibs('flashsaleFairRelease', 7, 'fair-release.lua', ['queue.lua', 'latch.lua']),
  withLibs('flashsaleRwAcquire', 6, 'rw-acquire.lua', ['queue.lua', 'rw-lib.lua']),
  withLibs('flashsaleRwRelease', 8, 'rw-release.lua', ['queue.lua', 'rw-lib.lua', 'latch.lua']),
  withLibs('flashsaleRwRenew', 2, 'rw-renew.lua', ['queue.lua', 'rw-lib.lua']),
  withLibs('flashsaleRedlockAcquire', 6, 'redlock-acquire.lua', ['queue.lua']),
  withLibs('flashsaleRedlockRelease', 7, 'redlock-release.lua', ['queue.lua', 'latch.lua']),
] as const;

type Arg = string | number;
type FamilyCommands<R> = {
  flashsaleFairAcquire(...args: Arg[]): R;
  flashsaleFairRelease(...args: Arg[]): R;
  flashsaleRwAcquire(...args: Arg[]): R;
  flashsaleRwRelease(...args: Arg[]): R;
  flashsaleRwRenew(...args: Arg[]): R;
  flashsaleRedlockAcquire(...args: Arg[]): R;
  flashsaleRedlockRelease(...args: Arg[]): R;
};
export type FamilyRedis = LockRedis & FamilyCommands<Promise<unknown>>;
export type FamilyPipeline = FamilyCommands<unknown>;

export function withFamilyScripts(redis: Redis): FamilyRedis {
  defineScripts(redis, FAMILY_SCRIPTS);
  return redis as FamilyRedis;
}

/** Same as the reentrant lock's: long enough to cover ioredis re-sending an unanswered command. */
export const UNLOCK_LATCH_MS = 10_000;

export interface QueuedAcquire {
  name: string;
  owner: string;
  leaseMs: number;
  mode: AcquireMode;
  clientId: string;
  /** How long the caller stays eligible for a grant from now (its deadline in the queue). */
  eligibleMs: number;
  /** Longest a queued waiter sleeps before asking again. */
  heartbeatMs: number;
}

/** The waiter-queue keys every queued script takes (scripts/queue.lua), in its order. */
function queueKeys(k: { queue: string; deadlines: string; waiters: string }): string[] {
  return [k.queue, k.deadlines, k.waiters];
}

/**
 * The arguments of a queued acquire script: its keys, then the request (with the read-write
 * lock's kind after the mode), ending with the wake channel prefix and the lock name.
 */
function queuedAcquireArgs(keys: Arg[], r: QueuedAcquire, kind?: RwKind): Arg[] {
  return [
    ...keys,
    r.leaseMs,
    r.owner,
    r.mode,
    ...(kind === undefined ? [] : [kind]),
    r.clientId,
    Math.ceil(r.eligibleMs),
    Math.ceil(r.heartbeatMs),
    wakeChannelPrefix,
    r.name,
  ];
}

export function fairAcquireArgs(r: QueuedAcquire): Arg[] {
  const k = fairKeys(r.name);
  return queuedAcquireArgs([k.lock, k.token, ...queueKeys(k)], r);
}

export function fairReleaseArgs(
  name: string,
  owner: string,
  leaseMs: number,
  mode: ReleaseMode,
  requestId: string,
): Arg[] {
  const k = fairKeys(name);
  const keys = [k.lock, k.channel, k.token, ...queueKeys(k), k.latch(requestId)];
  return [...keys, owner, leaseMs, mode, wakeChannelPrefix, UNLOCK_LATCH_MS, name];
}

export type RwKind = 'r' | 'w';

export function rwAcquireArgs(r: QueuedAcquire & { kind: RwKind }): Arg[] {
  const k = rwKeys(r.name);
  return queuedAcquireArgs([k.lock, k.holds, k.token, ...queueKeys(k)], r, r.kind);
}

export function rwReleaseArgs(
  name: string,
  owner: string,
  kind: RwKind,
  mode: ReleaseMode,
  requestId: string,
): Arg[] {
  const k = rwKeys(name);
  const keys = [k.lock, k.holds, k.token, ...queueKeys(k), k.latch(requestId), k.channel];
  return [...keys, owner, kind, mode, wakeChannelPrefix, UNLOCK_LATCH_MS, name];
}

export function rwRenewArgs(name: string, owner: string, kind: RwKind, leaseMs: number): Arg[] {
  const k = rwKeys(name);
  return [k.lock, k.holds, leaseMs, `${kind}:${owner}`];
}

export function redlockAcquireArgs(r: QueuedAcquire): Arg[] {
  const k = redlockKeys(r.name);
  return queuedAcquireArgs([k.lock, k.token, ...queueKeys(k), k.reservation], r);
}

export type RedlockReleaseMode = 'release' | 'rollback' | 'cancel';

export function redlockReleaseArgs(
  name: string,
  owner: string,
  leaseMs: number,
  mode: RedlockReleaseMode,
  requestId: string,
  reservationMs: number,
): Arg[] {
  const k = redlockKeys(name);
  const keys = [k.lock, k.channel, k.latch(requestId), ...queueKeys(k), k.reservation];
  return [...keys, owner, leaseMs, UNLOCK_LATCH_MS, mode, wakeChannelPrefix, name, Math.ceil(reservationMs)];
}

export type QueuedReply =
  | { acquired: true; token: number; holdCount: number; grantedMs: number }
  | { acquired: false; blockedMs: number; wakeInMs: number }
  | { acquired: false; upgrade: true };

/** {1, token, holdCount, grantedMs} | {0, blockedMs, wakeInMs} | {-1, 0, 0}. */
export function parseQueuedReply(reply: unknown): QueuedReply {
  if (!Array.isArray(reply)) throw new TypeError(`unexpected lock reply ${String(reply)}`);
  const status = replyInt(reply[0]);
  if (status === 1) {
    return {
      acquired: true,
      token: replyInt(reply[1]),
      holdCount: replyInt(reply[2]),
      grantedMs: replyInt(reply[3]),
    };
  }
  if (status === -1) return { acquired: false, upgrade: true };
  return { acquired: false, blockedMs: replyInt(reply[1]), wakeInMs: replyInt(reply[2]) };
}
