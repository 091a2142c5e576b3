// The reentrant lock's Lua scripts as typed commands, and the inputs built from a request, shared by
// the single-call path (LockClient) and the pipelined guarded round trip.
import type { ChainableCommander } from 'ioredis';
import { lockKeys, wakeChannelPrefix } from './keys.ts';
import { type InputOf, typedScript } from './lua.ts';
import type { RedisClient } from './redis-client.ts';
import { ownerTtl, parseAcquireReply, parseReleaseReply, parseRenewReply } from './replies.ts';

/** A pipeline the lock scripts can be queued on (created from a client they are defined on). */
export type LockPipeline = ChainableCommander;

export type AcquireMode = 'try' | 'wait' | 'retry';
export type ReleaseMode = 'release' | 'cancel' | 'force';

/** A file of scripts/, the lock's Lua. */
export const scriptFile = (name: string) => new URL(`./scripts/${name}`, import.meta.url);

export const acquireScript = typedScript({
  name: 'flashsaleLockAcquire',
  file: scriptFile('acquire.lua'),
  keys: ['lock', 'token', 'queue', 'ours', 'latch'],
  args: ['leaseMs', 'owner', 'mode', 'clientId', 'eligibleMs', 'waitId', 'queuedEligibleMs', 'paired'],
  parse: parseAcquireReply,
});

export const releaseScript = typedScript({
  name: 'flashsaleLockRelease',
  file: scriptFile('release.lua'),
  keys: ['lock', 'channel', 'latch', 'token', 'queue', 'ours'],
  args: [
    'owner',
    'mode',
    'latchTtlMs',
    'wakePrefix',
    'name',
    'leaseMs',
    'sharded',
    'waitId',
    'clientId',
    'eligibleMs',
    'queuedEligibleMs',
    'starvationMs',
  ],
  parse: parseReleaseReply,
});

export const renewScript = typedScript({
  name: 'flashsaleLockRenew',
  file: scriptFile('renew.lua'),
  keys: ['lock', 'ours'],
  args: ['leaseMs', 'owner'],
  parse: parseRenewReply,
});

export const LOCK_SCRIPTS = [acquireScript, releaseScript, renewScript] as const;

/**
 * One wait of the reentrant lock: who waits, and what a release needs to hand it the lock (its queue
 * entry, which acquire.lua builds from these: see wait-entry.lua).
 */
export interface WaitEntry {
  /** Identifies this wait (unique per acquire call). */
  waitId?: string;
  owner: string;
  leaseMs: number;
  /** Names the waiter's wake channel. */
  clientId: string;
  /** How long, counted from the wait's first ask, the caller stays eligible for a hand-off. */
  eligibleMs: number;
}

export interface AcquireRequest extends WaitEntry {
  name: string;
  mode: AcquireMode;
  /** eligibleMs of this wait's previous ask, whose queue entry a 'retry' replaces (default: eligibleMs). */
  queuedEligibleMs?: number;
  /** Request id of the release pipelined right after this acquire (runGuarded), if any. */
  pairedRelease?: string;
}

export function acquireInput(r: AcquireRequest): InputOf<typeof acquireScript> {
  const k = lockKeys(r.name);
  return {
    lock: k.lock,
    token: k.token,
    queue: k.queue,
    ours: k.ours,
    latch: k.latch(r.pairedRelease ?? ''),
    leaseMs: r.leaseMs,
    owner: r.owner,
    mode: r.mode,
    waitId: r.waitId ?? '',
    // A 'try' never queues: no entry parts to send (the script builds an entry only when it queues).
    clientId: r.mode === 'try' ? '' : r.clientId,
    eligibleMs: r.mode === 'try' ? '' : Math.ceil(r.eligibleMs),
    queuedEligibleMs: r.mode === 'try' ? '' : Math.ceil(r.queuedEligibleMs ?? r.eligibleMs),
    paired: r.pairedRelease === undefined ? '' : '1',
  };
}

export interface ReleaseRequest {
  name: string;
  owner: string;
  /** Lease to keep while re-entry holds remain. */
  leaseMs: number;
  mode: ReleaseMode;
  /** Unique per release call: names its unlock latch. */
  requestId: string;
  /** The wait that gives up (required for 'cancel' only). */
  waitId?: string;
  /**
   * 'cancel': the wait's client and the eligibility (ms) of its last two asks, which name its queue
   * entries (the last ask's reply may have been lost): whichever is queued goes.
   */
  wait?: { clientId: string; eligibleMs: [number, number] };
  /** On a Redis Cluster: the unlock notice goes out with SPUBLISH (what Redisson 3.22+ listens to). */
  sharded?: boolean;
  /** A waiter queued longer than this is handed the lock directly (default DEFAULT_STARVATION_MS). */
  starvationMs?: number;
}

export function releaseInput(r: ReleaseRequest): InputOf<typeof releaseScript> {
  const k = lockKeys(r.name);
  return {
    lock: k.lock,
    channel: k.channel,
    token: k.token,
    queue: k.queue,
    latch: k.latch(r.requestId),
    ours: k.ours,
    owner: r.owner,
    leaseMs: r.leaseMs,
    mode: r.mode,
    wakePrefix: wakeChannelPrefix,
    latchTtlMs: UNLOCK_LATCH_MS,
    name: r.name,
    waitId: r.waitId ?? '',
    clientId: r.wait?.clientId ?? '',
    eligibleMs: r.wait ? Math.ceil(r.wait.eligibleMs[0]) : '',
    queuedEligibleMs: r.wait ? Math.ceil(r.wait.eligibleMs[1]) : '',
    sharded: r.sharded ? '1' : '',
    starvationMs: r.starvationMs ?? DEFAULT_STARVATION_MS,
  };
}

/** Input of renew.lua: extend `owner`'s hold on `name` to leaseMs. */
export function renewInput(name: string, owner: string, leaseMs: number): InputOf<typeof renewScript> {
  return { lock: name, ours: lockKeys(name).ours, leaseMs, owner };
}

/** Queues the reentrant (and fair) lock's renewal of a hold on a watchdog pipeline. */
export function queueRenew(pipeline: LockPipeline, name: string, owner: string, leaseMs: number): void {
  renewScript.run(pipeline, renewInput(name, owner, leaseMs));
}

/** The owner's remaining lease on a reentrant (or fair) lock hash: HEXISTS + PTTL; 0 when not held. */
export async function hashOwnerTtl(redis: RedisClient, name: string, owner: string): Promise<number> {
  return ownerTtl(await redis.pipeline().hexists(name, owner).pttl(name).exec());
}

/**
 * How long a queued waiter of the reentrant lock may be barged past before a release hands it the
 * lock directly (Go's sync.Mutex: 1 ms). Chosen by `npm run bench:locks` (docs/lock-library.md).
 */
export const DEFAULT_STARVATION_MS = 1;

/** Long enough to cover ioredis re-sending an unanswered command after a reconnect. */
export const UNLOCK_LATCH_MS = 10_000;
