// The reentrant lock's wait (LockClient): one attempt, then queued in Redis under a wait id of its own
// until a release hands the lock to that wait; a waiter that gives up leaves the queue and passes on.
import { performance } from 'node:perf_hooks';
import type { LockCore } from './core.ts';
import type { AcquireOptions } from './front-end.ts';
import { isCluster } from './redis-client.ts';
import type { AcquireReply } from './replies.ts';
import { type AcquireRequest, releaseInput, releaseScript } from './scripts.ts';
import { waitTurn, withDeadline } from './waiting.ts';

/** A successful acquire: viaAttempt 0 means the lock was handed to the wait by a release. */
export interface Obtained {
  token: number;
  holdCount: number;
  viaAttempt: number;
}

/** Who waits for which lock, and for how long. */
export interface WaitRequest {
  name: string;
  owner: string;
  leaseMs: number;
  options: Pick<AcquireOptions, 'waitMs' | 'signal'>;
}

/** One acquire in the given mode (a plain script call, or the first guarded pipeline). */
export type Attempt = (req: AcquireRequest) => Promise<AcquireReply>;

/**
 * The waiting loop shared by every acquire form of LockClient. `attempt` performs one acquire in the
 * given mode; between attempts we sleep until a hand-off, a foreign release or the holder's PTTL,
 * whichever first. On timeout or abort the queue entry is withdrawn (and a lock handed to us
 * meanwhile is passed on) before the promise settles.
 */
export function waitInQueue(core: LockCore, wait: WaitRequest, attempt: Attempt): Promise<Obtained | null> {
  const { name, owner, leaseMs, options } = wait;
  // Each wait has its own id: two waits of one owner (re-entrant chains) never stand for each other.
  const waitId = `${core.nextRequestId()}:w`;
  const { clientId } = core;
  let attempts = 0;
  // The queue entry's eligibility counts from the wait's first ask (the entry's score), and is
  // renewed by each ask: entries of the last two asks (the last one's reply may have been lost).
  let firstAskAt: number | undefined;
  const asked: [number, number] = [0, 0];
  return waitTurn({
    waitMs: options.waitMs ?? 0,
    signal: options.signal,
    attempt: async (mode, eligibleMs) => {
      const now = performance.now();
      firstAskAt ??= now;
      const sinceFirst = Math.ceil(now - firstAskAt + eligibleMs);
      const queuedEligibleMs = attempts === 0 ? sinceFirst : asked[0];
      asked[1] = queuedEligibleMs;
      asked[0] = sinceFirst;
      const req = { name, owner, leaseMs, clientId, waitId, mode, eligibleMs: sinceFirst, queuedEligibleMs };
      const reply = await attempt(req);
      attempts += 1;
      if (reply.acquired) {
        const { token, holdCount } = reply;
        return { acquired: true, value: { token, holdCount, viaAttempt: attempts } };
      }
      return {
        acquired: false,
        // PTTL -1: a lock without a TTL can only end by a release, so wait for its message (up to
        // the heartbeat), not a timer; 0 or -2: it is lapsing right now, so ask again at once.
        retryInMs: reply.pttl === -1 ? Number.POSITIVE_INFINITY : Math.max(reply.pttl, 1),
        handOffExpected: reply.handOffExpected,
      };
    },
    open: async (deadline) => {
      const { hub } = core;
      if (!hub.started) await core.call(name, () => withDeadline(hub.start(), deadline - performance.now()));
      const waiter = hub.register(name, waitId);
      return {
        next: (ms, signal) => waiter.next(ms, signal),
        listen: () => hub.watchForeign(name),
        close: () => hub.unregister(waiter),
      };
    },
    handedOff: async (event) => ({ token: event.token, holdCount: 1, viaAttempt: 0 }),
    withdraw: () => withdraw(core, wait, waitId, [asked[0], asked[1]]),
  });
}

/** A waiter gives up: leave the queue; if the lock was handed to this wait meanwhile, pass it on. */
async function withdraw(
  core: LockCore,
  wait: WaitRequest,
  waitId: string,
  eligibleMs: [number, number],
): Promise<void> {
  const { name, owner, leaseMs } = wait;
  try {
    const requestId = core.nextRequestId();
    const sharded = isCluster(core.redis);
    await releaseScript.run(
      core.redis,
      releaseInput({
        name,
        owner,
        leaseMs,
        mode: 'cancel',
        requestId,
        waitId,
        wait: { clientId: core.clientId, eligibleMs },
        sharded,
        starvationMs: core.starvationMs,
      }),
    );
  } catch {
    // Redis unreachable: the queue entry is skipped past its eligibility, a handed lock lapses with its lease.
  }
}
