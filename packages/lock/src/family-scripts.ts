// Lua scripts of the fair, read-write and multi-master locks as typed commands, with the inputs built
// from a request. Their shared Lua (queue.lua, rw-lib.lua, latch.lua) comes in by --- @include.

import { fairKeys, redlockKeys, rwKeys, wakeChannelPrefix } from './keys.ts';
import { type InputOf, replyInt, typedScript } from './lua.ts';
import { parseAcquireReply, parseQueuedReply, parseReleaseReply, parseRenewReply } from './replies.ts';
import { type AcquireMode, type ReleaseMode, scriptFile, UNLOCK_LATCH_MS } from './scripts.ts';

export const fairAcquireScript = typedScript({
  name: 'flashsaleFairAcquire',
  file: scriptFile('fair-acquire.lua'),
  keys: ['lock', 'token', 'queue', 'waiters', 'deadlines'],
  args: ['leaseMs', 'owner', 'mode', 'clientId', 'eligibleMs', 'heartbeatMs', 'wakePrefix', 'name'],
  parse: parseQueuedReply,
});

export const fairReleaseScript = typedScript({
  name: 'flashsaleFairRelease',
  file: scriptFile('fair-release.lua'),
  keys: ['lock', 'channel', 'latch', 'token', 'queue', 'waiters', 'deadlines'],
  args: ['owner', 'mode', 'latchTtlMs', 'wakePrefix', 'name', 'leaseMs', 'sharded'],
  parse: parseReleaseReply,
});

export const rwAcquireScript = typedScript({
  name: 'flashsaleRwAcquire',
  file: scriptFile('rw-acquire.lua'),
  keys: ['lock', 'token', 'queue', 'waiters', 'deadlines', 'holds'],
  args: ['leaseMs', 'owner', 'mode', 'clientId', 'eligibleMs', 'heartbeatMs', 'wakePrefix', 'name', 'kind'],
  parse: parseQueuedReply,
});

export const rwReleaseScript = typedScript({
  name: 'flashsaleRwRelease',
  file: scriptFile('rw-release.lua'),
  keys: ['lock', 'channel', 'latch', 'token', 'queue', 'waiters', 'deadlines', 'holds'],
  args: ['owner', 'mode', 'latchTtlMs', 'wakePrefix', 'name', 'kind', 'sharded'],
  parse: parseReleaseReply,
});

export const rwRenewScript = typedScript({
  name: 'flashsaleRwRenew',
  file: scriptFile('rw-renew.lua'),
  keys: ['lock', 'holds'],
  args: ['leaseMs', 'hold'],
  parse: parseRenewReply,
});

export const redlockAcquireScript = typedScript({
  name: 'flashsaleRedlockAcquire',
  file: scriptFile('redlock-acquire.lua'),
  keys: ['lock', 'token', 'queue', 'waiters', 'deadlines', 'reservation'],
  args: ['leaseMs', 'owner', 'mode', 'clientId', 'eligibleMs', 'heartbeatMs', 'wakePrefix', 'name'],
  parse: parseAcquireReply,
});

export const redlockReleaseScript = typedScript({
  name: 'flashsaleRedlockRelease',
  file: scriptFile('redlock-release.lua'),
  keys: ['lock', 'channel', 'latch', 'queue', 'waiters', 'deadlines', 'reservation'],
  args: ['owner', 'mode', 'latchTtlMs', 'wakePrefix', 'name', 'leaseMs', 'reservationMs'],
  parse: parseReleaseReply,
});

export const redlockRaiseScript = typedScript({
  name: 'flashsaleRedlockRaise',
  file: scriptFile('redlock-raise.lua'),
  keys: ['counter'],
  args: ['token'],
  parse: replyInt,
});

export const FAMILY_SCRIPTS = [
  fairAcquireScript,
  fairReleaseScript,
  rwAcquireScript,
  rwReleaseScript,
  rwRenewScript,
  redlockAcquireScript,
  redlockReleaseScript,
  redlockRaiseScript,
] as const;

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

/** The request part every queued acquire script takes. */
function queuedRequest(r: QueuedAcquire) {
  return {
    leaseMs: r.leaseMs,
    owner: r.owner,
    mode: r.mode,
    clientId: r.clientId,
    eligibleMs: Math.ceil(r.eligibleMs),
    heartbeatMs: Math.ceil(r.heartbeatMs),
    wakePrefix: wakeChannelPrefix,
    name: r.name,
  };
}

/** The waiter-queue keys every queued script takes (scripts/queue.lua). */
function queueKeys(k: { queue: string; deadlines: string; waiters: string }) {
  return { queue: k.queue, deadlines: k.deadlines, waiters: k.waiters };
}

export interface QueuedRelease<M extends string = ReleaseMode> {
  name: string;
  owner: string;
  /** Lease to keep while re-entry holds remain. */
  leaseMs: number;
  mode: M;
  /** Unique per release call: names its unlock latch. */
  requestId: string;
  /** On a Redis Cluster: the unlock notice goes out with SPUBLISH (what Redisson 3.22+ listens to). */
  sharded?: boolean;
}

export function fairAcquireInput(r: QueuedAcquire): InputOf<typeof fairAcquireScript> {
  const k = fairKeys(r.name);
  return { lock: k.lock, token: k.token, ...queueKeys(k), ...queuedRequest(r) };
}

/** What the fair, read-write and RedLock release scripts take alike: who releases how, its latch, whom to tell. */
function releaseBasics<M extends string>(
  k: { channel: string; latch: (requestId: string) => string },
  r: { name: string; owner: string; mode: M; requestId: string },
) {
  return {
    channel: k.channel,
    latch: k.latch(r.requestId),
    owner: r.owner,
    mode: r.mode,
    wakePrefix: wakeChannelPrefix,
    latchTtlMs: UNLOCK_LATCH_MS,
    name: r.name,
  };
}

export function fairReleaseInput(r: QueuedRelease): InputOf<typeof fairReleaseScript> {
  const k = fairKeys(r.name);
  return {
    lock: k.lock,
    token: k.token,
    ...queueKeys(k),
    ...releaseBasics(k, r),
    leaseMs: r.leaseMs,
    sharded: r.sharded ? '1' : '',
  };
}

export type RwKind = 'r' | 'w';

export function rwAcquireInput(r: QueuedAcquire & { kind: RwKind }): InputOf<typeof rwAcquireScript> {
  const k = rwKeys(r.name);
  return { lock: k.lock, holds: k.holds, token: k.token, ...queueKeys(k), ...queuedRequest(r), kind: r.kind };
}

export function rwReleaseInput(
  r: Omit<QueuedRelease, 'leaseMs'> & { kind: RwKind },
): InputOf<typeof rwReleaseScript> {
  const k = rwKeys(r.name);
  return {
    lock: k.lock,
    holds: k.holds,
    token: k.token,
    ...queueKeys(k),
    ...releaseBasics(k, r),
    kind: r.kind,
    sharded: r.sharded ? '1' : '',
  };
}

export function rwRenewInput(
  name: string,
  owner: string,
  kind: RwKind,
  leaseMs: number,
): InputOf<typeof rwRenewScript> {
  const k = rwKeys(name);
  return { lock: k.lock, holds: k.holds, leaseMs, hold: `${kind}:${owner}` };
}

export function redlockAcquireInput(r: QueuedAcquire): InputOf<typeof redlockAcquireScript> {
  const k = redlockKeys(r.name);
  return { lock: k.lock, token: k.token, ...queueKeys(k), reservation: k.reservation, ...queuedRequest(r) };
}

export type RedlockReleaseMode = 'release' | 'rollback' | 'cancel';

export function redlockReleaseInput(
  r: QueuedRelease<RedlockReleaseMode> & { reservationMs: number },
): InputOf<typeof redlockReleaseScript> {
  const k = redlockKeys(r.name);
  return {
    lock: k.lock,
    ...queueKeys(k),
    ...releaseBasics(k, r),
    reservation: k.reservation,
    leaseMs: r.leaseMs,
    reservationMs: Math.ceil(r.reservationMs),
  };
}
