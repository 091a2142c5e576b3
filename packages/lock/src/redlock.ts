// Multi-master lock (RedLock) over N independent Redis masters: a majority round per acquisition on the
// reentrant lock's layout, with fencing tokens, watchdog and one woken waiter per release.
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Redis } from 'ioredis';
import { LockNotHeldError, LockQuorumUnavailableError } from './errors.ts';
import { redlockAcquireInput, redlockAcquireScript } from './family-scripts.ts';
import { type LockEventObserver, LockFrontEnd, type ObtainRequest } from './front-end.ts';
import { type HandleOwner, LockHandle } from './handle.ts';
import { newClientId } from './owner.ts';
import { clientOf, type RedisConnection } from './redis-client.ts';
import { type Poll, RedlockMasters } from './redlock-masters.ts';
import { type AcquireReply, ownerTtl } from './replies.ts';
import { type AcquireMode, renewInput, renewScript } from './scripts.ts';
import { type TurnReply, waitTurn } from './waiting.ts';
import { Watchdog } from './watchdog.ts';

/** Options of a RedLock; every one is optional. */
export interface RedLockOptions {
  /** Readable prefix of this instance's id `<clientId>-<uuid>` (owner ids `<id>:<n>`): never shared. */
  clientId?: string;
  /** Lease kept alive by the watchdog when acquire() is given no leaseMs (default 30 s). */
  watchdogLeaseMs?: number;
  /** Longest wait for one master's answer (default: 1 % of the lease, between 50 ms and 1 s). */
  masterTimeoutMs?: number;
  /** Clock drift allowance: lease × driftFactor + driftMs (defaults 0.01 and 2 ms, as in the paper). */
  driftFactor?: number;
  driftMs?: number;
  /** How long a master keeps a freed lock for the waiter it woke (default: 2 × the master timeout). */
  reservationMs?: number;
  /** Longest a waiter sleeps before asking again (default 1 s); it stays queued 3 × that per ask. */
  heartbeatMs?: number;
  /** Observes waits and holds, as LockClient's `onEvent`; whatever it throws is ignored. */
  onEvent?: LockEventObserver;
}

type Refusal = 'held' | 'split' | 'unavailable';

/** Why a round did not acquire, and when to ask again. */
interface Refused {
  refusal: Refusal;
  reachable: number;
  retryInMs: number;
  reason?: string;
}

/** Pause before asking again when too few masters answered. */
const UNAVAILABLE_RETRY_MS = 100;
/** First random pause after a split vote; doubles with each split in a row (up to 16x). */
const SPLIT_JITTER_MS = 5;

/**
 * A lock over N independent Redis masters (RedLock). One round tries every master in parallel, each
 * answer bounded by `masterTimeoutMs`, and decides once a majority (⌊N/2⌋+1) answered: acquired when a
 * majority granted it and lease − elapsed − drift is still positive; otherwise the round is rolled back
 * on every master. A waiter queues on every master; a master whose lock becomes free keeps it for
 * `reservationMs` for its oldest waiter and wakes only that one. After a split vote it asks again after
 * a random, growing pause. The fencing token is the largest of the acquiring masters' counters.
 * Release, extend and the watchdog work on every master and keep the hold only with a majority.
 *
 * Errors: LockAcquireTimeoutError when a majority answered and another owner held the lock;
 * LockQuorumUnavailableError when too few masters answered to decide.
 *
 * @example
 * const redlock = new RedLock([redisA, redisB, redisC]);
 * await redlock.withLock('payout:9', { waitMs: 2000 }, async (hold) => pay(hold.token));
 */
export class RedLock extends LockFrontEnd implements HandleOwner {
  readonly watchdogLeaseMs: number;
  /** Masters that must agree: ⌊N/2⌋ + 1. */
  readonly quorum: number;
  private readonly masters: RedlockMasters;
  private readonly watchdog: Watchdog;
  private readonly options: RedLockOptions;
  private readonly heartbeatMs: number;

  /** `masters`: ioredis `Redis` connections (ioredis 5 or 6) to independent masters; not closed by close(). */
  constructor(masters: RedisConnection[], options: RedLockOptions = {}) {
    super(newClientId(options.clientId), options.watchdogLeaseMs ?? 30_000, options.onEvent);
    this.watchdogLeaseMs = this.defaultLeaseMs;
    if (!(this.watchdogLeaseMs > 0)) throw new RangeError('watchdogLeaseMs must be > 0');
    this.options = options;
    this.heartbeatMs = options.heartbeatMs ?? 1000;
    this.masters = new RedlockMasters(masters.map(clientOf) as Redis[], this.clientId, options);
    this.quorum = this.masters.quorum;
    const renewer = this.masters.batchRenewer((leaseMs) => this.drift(leaseMs));
    this.watchdog = new Watchdog(renewer, this.watchdogLeaseMs);
  }

  /**
   * One acquisition: rounds until acquired or waitMs ran out (null: held elsewhere for all of it).
   * LockQuorumUnavailableError when the last round could not reach a majority.
   */
  protected async obtain(request: ObtainRequest): Promise<LockHandle | null> {
    const { name, owner, leaseMs, keepAlive } = request;
    const started = performance.now();
    let last: { refusal: Refusal; reachable: number; reason?: string } = {
      refusal: 'held',
      reachable: this.masters.size,
    };
    let splits = 0;
    const handle = await waitTurn<LockHandle>({
      waitMs: request.waitMs,
      signal: request.signal,
      eligibleCapMs: 3 * this.heartbeatMs,
      retryCapMs: this.heartbeatMs,
      attempt: async (mode, eligibleMs): Promise<TurnReply<LockHandle>> => {
        if (splits > 0) await sleep(Math.random() * SPLIT_JITTER_MS * 2 ** Math.min(splits - 1, 4));
        const round = await this.round(name, owner, leaseMs, keepAlive, mode, eligibleMs);
        if ('handle' in round) return { acquired: true, value: round.handle };
        last = round;
        splits = round.refusal === 'split' ? splits + 1 : 0;
        return { acquired: false, retryInMs: round.retryInMs };
      },
      open: async (deadline) => this.masters.listen(name, owner, leaseMs, deadline),
      withdraw: async () => {
        await this.masters.release({ name, owner, leaseMs, mode: 'cancel' }, () => true);
      },
    });
    if (!handle && last.refusal === 'unavailable') {
      throw new LockQuorumUnavailableError(name, last.reachable, this.quorum, this.masters.size, last.reason);
    }
    this.reportObtain(name, started, handle, false);
    return handle;
  }

  /** Stops the watchdog and the subscribers; held locks then lapse with their lease. */
  async close(): Promise<void> {
    this.watchdog.stop();
    await this.masters.close();
  }

  // --- HandleOwner ---

  /** Drops our hold on every master; throws LockNotHeldError when a majority no longer had it. */
  async releaseHandle(handle: LockHandle): Promise<void> {
    if (handle.watchdog) this.watchdog.remove(handle);
    const answers = await this.masters.release(
      { name: handle.name, owner: handle.owner, leaseMs: handle.leaseMs, mode: 'release' },
      () => true,
    );
    const notHeld = answers.filter((a) => a?.ok && a.value === null).length;
    if (notHeld > this.masters.size - this.quorum) throw new LockNotHeldError(handle.name);
    this.reportRelease(handle);
  }

  /** Renews on every master; keeps the hold only with a majority (validity as for acquire). */
  async extendHandle(handle: LockHandle, leaseMs: number): Promise<void> {
    if (handle.released) throw new LockNotHeldError(handle.name);
    const start = performance.now();
    const { answers, yes } = await this.masters.poll(
      (m) => renewScript.run(m.redis, renewInput(handle.name, handle.owner, leaseMs)),
      (renewed) => renewed,
      true,
      this.watchdogLeaseMs,
    );
    const drift = this.drift(leaseMs);
    if (yes >= this.quorum && performance.now() - start < leaseMs - drift) {
      handle.confirm(start - drift, leaseMs);
      return;
    }
    const lost = answers.filter((a) => a?.ok && !a.value).length;
    if (lost > this.masters.size - this.quorum) {
      handle.markLost('a majority of masters no longer hold the lock');
      throw new LockNotHeldError(handle.name);
    }
    const reachable = answers.filter((a) => a?.ok).length;
    throw new LockQuorumUnavailableError(handle.name, reachable, this.quorum, this.masters.size);
  }

  /** Time until fewer than a majority of masters hold the lock for this owner (0 if they already don't). */
  async remainingTtl(handle: LockHandle): Promise<number> {
    const { answers } = await this.masters.poll(
      (m) => m.redis.pipeline().hexists(handle.name, handle.owner).pttl(handle.name).exec(),
      () => false,
      false,
      this.watchdogLeaseMs,
    );
    const ttls = answers.map((a) => (a?.ok ? ownerTtl(a.value) : 0)).sort((x, y) => y - x);
    return ttls[this.quorum - 1] ?? 0;
  }

  // --- internals ---

  private drift(leaseMs: number): number {
    return leaseMs * (this.options.driftFactor ?? 0.01) + (this.options.driftMs ?? 2);
  }

  /** One acquisition round on every master; rolls back when refused. */
  private async round(
    name: string,
    owner: string,
    leaseMs: number,
    watchdog: boolean,
    mode: AcquireMode,
    eligibleMs: number,
  ): Promise<{ handle: LockHandle } | Refused> {
    const start = performance.now();
    const input = redlockAcquireInput({
      name,
      owner,
      leaseMs,
      mode,
      clientId: this.clientId,
      eligibleMs,
      heartbeatMs: this.heartbeatMs,
    });
    const poll = await this.masters.poll(
      (m) => redlockAcquireScript.run(m.redis, input),
      (r) => r.acquired,
      true,
      leaseMs,
    );
    const drift = this.drift(leaseMs);
    const validity = leaseMs - (performance.now() - start) - drift;
    if (poll.yes < this.quorum || validity <= 0) return this.refused(name, owner, leaseMs, poll, validity);
    const granted = poll.answers.flatMap((a) => (a?.ok && a.value.acquired ? [a.value] : []));
    const token = Math.max(...granted.map((r) => r.token));
    const holdCount = Math.min(...granted.map((r) => r.holdCount));
    // Known valid until start + lease − drift: every master set its lease after we sent at start.
    const from = start - drift;
    const handle = new LockHandle(this, name, owner, token, holdCount, leaseMs, watchdog, from, 'redlock');
    if (watchdog) this.watchdog.add(handle);
    return { handle };
  }

  /** A refused round: rolled back on the masters, and why it was refused. */
  private async refused(
    name: string,
    owner: string,
    leaseMs: number,
    { answers, yes }: Poll<AcquireReply>,
    validity: number,
  ): Promise<Refused> {
    // Undo the round: wait for the masters that granted it or have not answered (each runs the
    // rollback after the attempt); masters that refused or failed are told too, not waited for.
    await this.masters.release({ name, owner, leaseMs, mode: 'rollback' }, (i) => {
      const a = answers[i];
      return a === undefined || (a.ok && a.value.acquired);
    });
    const replies = answers.flatMap((a) => (a?.ok ? [a.value] : []));
    const reachable = replies.length;
    const held = replies.flatMap((r) => (r.acquired ? [] : [Math.max(r.pttl, 1)]));
    const retryInMs = UNAVAILABLE_RETRY_MS * (1 + Math.random());
    if (reachable < this.quorum) return { refusal: 'unavailable', reachable, retryInMs };
    if (yes >= this.quorum) {
      const drift = this.drift(leaseMs);
      const reason = `a majority granted the lock but no validity was left (lease ${leaseMs} ms − ${Math.round(leaseMs - drift - validity)} ms elapsed − ${drift} ms drift)`;
      return { refusal: 'unavailable', reachable, retryInMs, reason };
    }
    return {
      refusal: yes > 0 ? 'split' : 'held',
      reachable,
      retryInMs: held.length ? Math.min(...held) : 1,
    };
  }
}
