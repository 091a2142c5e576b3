// The waiting loop shared by every lock kind: ask; when refused, sleep until a hand-off, a wake-up, a
// hint or the retry time (never past the deadline), then ask again; owns deadlines, abort and cleanup.
import { performance } from 'node:perf_hooks';
import type { AcquireMode } from './scripts.ts';
import type { WaitEvent } from './wake-hub.ts';

/** A waiter stays eligible for a hand-off at most this long without asking again. */
export const ELIGIBLE_CAP_MS = 15_000;
/** A waiter asks again at least this often, refreshing its eligibility. */
export const RETRY_CAP_MS = 5_000;

export type TurnReply<T> =
  | { acquired: true; value: T }
  /** handOffExpected: the holder will hand the lock to our queue, so no other wake-up source is needed. */
  | { acquired: false; retryInMs: number; handOffExpected?: boolean };

/** Where a waiter's wake-ups come from (one WakeHub waiter, or several for a multi-master lock). */
export interface WaitSource {
  /** Resolves on a hand-off, a wake-up, a hint or after timeoutMs; rejects with the signal's reason. */
  next(timeoutMs: number, signal?: AbortSignal): Promise<WaitEvent>;
  /**
   * Called after each refused attempt. True when it just started listening for releases the waiter
   * could otherwise miss: a release published before that was live went unheard, so ask again now.
   */
  listen?(): Promise<boolean>;
  /** Forget a hand-off that turned out void. */
  clearHandoff?(): void;
  close(): void;
}

export interface Turn<T> {
  /** Monotonic ms to wait; 0 or less: a single attempt in 'try' mode (no queueing, no subscription). */
  waitMs: number;
  signal?: AbortSignal | undefined;
  /** Overrides ELIGIBLE_CAP_MS and RETRY_CAP_MS (the retry cap is the waiter's heartbeat). */
  eligibleCapMs?: number;
  retryCapMs?: number;
  /** One acquire attempt. eligibleMs: how long the caller stays eligible for a hand-off from now. */
  attempt(mode: AcquireMode, eligibleMs: number): Promise<TurnReply<T>>;
  /** Starts listening for wake-ups; deadline is the wait's end on the monotonic clock. */
  open(deadline: number): Promise<WaitSource>;
  /** A release handed us the lock; null when the grant turned out void (keep waiting). */
  handedOff?(event: Extract<WaitEvent, { kind: 'handoff' }>): Promise<T | null>;
  /** Gives up: leave any queue, and pass on a lock handed to us meanwhile. Must not throw. */
  withdraw?(): Promise<void>;
}

/**
 * Starts listening; null when that could not finish before the wait's deadline (a short wait on a slow
 * connection has run out: a timeout, not an unreachable server).
 */
async function openUntil<T>(turn: Turn<T>, deadline: number): Promise<WaitSource | null> {
  try {
    return await turn.open(deadline);
  } catch (err) {
    if (performance.now() >= deadline) return null;
    throw err;
  }
}

/** Resolves to the attempt's or hand-off's value, or null when the wait ran out. */
export async function waitTurn<T>(turn: Turn<T>): Promise<T | null> {
  const { signal } = turn;
  signal?.throwIfAborted();
  const deadline = performance.now() + Math.max(0, turn.waitMs);
  const eligibleCap = turn.eligibleCapMs ?? ELIGIBLE_CAP_MS;
  const retryCap = turn.retryCapMs ?? RETRY_CAP_MS;

  if (!(turn.waitMs > 0)) {
    const reply = await turn.attempt('try', 0);
    return reply.acquired ? reply.value : null;
  }

  const source = await openUntil(turn, deadline);
  if (!source) return null;
  let acquired = false;
  try {
    let mode: AcquireMode = 'wait';
    for (;;) {
      const remaining = deadline - performance.now();
      if (remaining <= 0) return null;
      const reply = await turn.attempt(mode, Math.min(remaining, eligibleCap));
      if (reply.acquired) {
        acquired = true;
        return reply.value;
      }
      mode = 'retry';
      if (!reply.handOffExpected && source.listen && (await source.listen())) continue;
      let wakeAt = performance.now() + Math.min(reply.retryInMs, retryCap);
      for (;;) {
        const pause = Math.max(0, Math.min(wakeAt, deadline) - performance.now());
        const event = await source.next(pause, signal);
        if (event.kind === 'handoff') {
          const value = turn.handedOff ? await turn.handedOff(event) : null;
          if (value !== null) {
            acquired = true;
            return value;
          }
          source.clearHandoff?.();
          break;
        }
        // A hint pulls the timer in: the waiter asks again when what blocks it may have lapsed (at once
        // for 0 ms: a targeted wake-up).
        if (event.kind === 'head' && event.blockedMs > 0) {
          wakeAt = Math.min(wakeAt, performance.now() + event.blockedMs);
        } else break;
      }
    }
  } finally {
    source.close();
    if (!acquired) await turn.withdraw?.();
  }
}

/**
 * Rejects with an ETIMEDOUT error (by default worded like a closed connection, which the lock errors
 * classify as unavailable) when `promise` has not settled within ms; the operation itself carries on.
 */
export function withDeadline<T>(
  promise: Promise<T>,
  ms: number,
  message = 'Connection is closed',
): Promise<T> {
  if (!Number.isFinite(ms)) return promise;
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(Object.assign(new Error(message), { code: 'ETIMEDOUT' })), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

/**
 * Resolves after `ms`, or as soon as the function handed to `arm` is called (a watch fired); rejects
 * with the signal's reason on abort. The etcd and ZooKeeper waiters sleep on their predecessor's
 * watch this way between looks at the queue.
 */
export function wakeableSleep(
  ms: number,
  signal: AbortSignal | undefined,
  arm: (wake: () => void) => void,
): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    if (signal?.aborted) {
      reject(signal.reason);
      return;
    }
    const onAbort = () => done(() => reject(signal?.reason));
    const timer = setTimeout(() => done(resolve), ms);
    const done = (settle: () => void) => {
      clearTimeout(timer);
      signal?.removeEventListener('abort', onAbort);
      settle();
    };
    arm(() => done(resolve));
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}
