// Admission control of orders in one API process: an adaptive concurrency limit (AIMD on each order's
// latency) in front of a short, bounded wait queue, so overload is refused at once instead of queued.

import { performance } from 'node:perf_hooks';
import type { AdmissionState } from '../metrics.ts';

/** Settings of {@link AdmissionControl} (ADMISSION_* in src/config.ts). */
export interface AdmissionOptions {
  /** The limit at start, and the level it climbs back to after congestion without needing load. */
  initialLimit: number;
  minLimit: number;
  maxLimit: number;
  /** An admitted order that takes longer than this (admission to answer) is a congestion signal. */
  targetMs: number;
  /** Longest wait for a slot while the queue is not standing (a burst). 0: never wait. */
  queueMs: number;
  /** Longest wait once the queue has been non-empty for `queueMs` (sustained overload). */
  overloadQueueMs: number;
  /** Most requests waiting at once (memory bound; a standing queue holds at most one limit's worth). */
  maxQueue: number;
  /** Event-loop delay above which nothing waits: a request without a free slot is refused. 0: ignored. */
  maxLagMs: number;
}

/** Why a request was refused. */
export type ShedReason = 'queue_full' | 'queue_timeout' | 'loop_lag';

/** Ends an admitted order: frees its slot and feeds its latency to the limit. Idempotent. */
export type Release = () => void;

interface Waiter {
  resolve: (r: Release | ShedReason) => void;
  timer: NodeJS.Timeout;
}

/** A slow order cuts the limit by target/latency, but never below this factor in one cut. */
const MAX_CUT = 0.5;

/**
 * Adaptive concurrency limit with a CoDel-style queue, after Netflix concurrency-limits' AIMD limit
 * and Facebook's "controlled delay" server queues:
 * - at most `limit` orders run at once; one more waits for a slot, FIFO, for a bounded time;
 * - a completion slower than `targetMs` cuts the limit in proportion (x target/latency, at most
 *   halving it), once per round (only an order admitted after the previous cut may cut again, so
 *   one slow burst is one cut, not a collapse);
 * - a fast completion adds 1 below the initial limit (recovery needs no load: the initial limit is
 *   the known-safe level, and staying under it needs fresh evidence of congestion) and 1/limit
 *   above it, only while the limit is in use (half of it in flight), so idleness never inflates it;
 * - a burst may wait `queueMs`; once the queue has stood that long (overload, not a burst), new
 *   waiters get `overloadQueueMs` and the queue is capped at one limit's worth, so whatever cannot
 *   be served soon is refused on arrival, in microseconds, instead of after waiting;
 * - while the event loop lags more than `maxLagMs`, nothing waits (a waiter would only grow stale).
 *   Lag does not cut the limit: on a shared machine it also measures the neighbours' load, and a
 *   process starved by them would throttle itself to its floor (measured: capacity fell by 4/5);
 *   the latency of admitted orders already carries the lag that matters.
 */
export class AdmissionControl {
  private limitValue: number;
  private inflight = 0;
  private readonly waiters: Waiter[] = [];
  /** performance.now() when the queue last went from empty to non-empty; undefined while empty. */
  private queuedSince: number | undefined;
  /** performance.now() of the last cut: only orders admitted after it may cut again. */
  private lastCut = Number.NEGATIVE_INFINITY;

  constructor(
    private readonly o: AdmissionOptions,
    /** The current event-loop delay in ms (EventLoopLag.current). */
    private readonly lagMs: () => number = () => 0,
  ) {
    this.limitValue = o.initialLimit;
  }

  /** The current limit (whole orders). */
  get limit(): number {
    return Math.floor(this.limitValue);
  }

  state(): AdmissionState {
    return { limit: this.limit, inflight: this.inflight, queued: this.waiters.length };
  }

  /**
   * A slot for one order: a Release when admitted (at once, or after a bounded wait), else why not.
   * Synchronous unless the request waits.
   */
  acquire(): Release | ShedReason | Promise<Release | ShedReason> {
    if (this.hasFreeSlot()) return this.admit();
    const now = performance.now();
    const refused = this.refusal(now);
    if (refused) return refused;
    const waitMs = this.standing(now) ? this.o.overloadQueueMs : this.o.queueMs;
    return new Promise((resolve) => {
      const waiter: Waiter = {
        resolve,
        timer: setTimeout(() => {
          this.waiters.splice(this.waiters.indexOf(waiter), 1);
          if (this.waiters.length === 0) this.queuedSince = undefined;
          resolve('queue_timeout');
        }, waitMs),
      };
      if (this.waiters.length === 0) this.queuedSince = now;
      this.waiters.push(waiter);
    });
  }

  /**
   * Why an order arriving now would be refused on arrival, or undefined if it would be admitted or
   * may wait. Lets the HTTP server refuse before it reads or parses the request (the shed lane).
   */
  refusalOnArrival(): ShedReason | undefined {
    return this.hasFreeSlot() ? undefined : this.refusal(performance.now());
  }

  private hasFreeSlot(): boolean {
    return this.inflight < this.limit && this.waiters.length === 0;
  }

  /** With no free slot: the reason to refuse a new arrival at once, or undefined if it may wait. */
  private refusal(now: number): ShedReason | undefined {
    if (this.o.maxLagMs > 0 && this.lagMs() > this.o.maxLagMs) return 'loop_lag';
    const standing = this.standing(now);
    const waitMs = standing ? this.o.overloadQueueMs : this.o.queueMs;
    const room = standing ? Math.min(this.o.maxQueue, this.limit) : this.o.maxQueue;
    if (waitMs <= 0 || this.waiters.length >= room) return 'queue_full';
    return undefined;
  }

  /** True once the queue has stood for `queueMs`: sustained overload, not a burst. */
  private standing(now: number): boolean {
    return this.queuedSince !== undefined && now - this.queuedSince >= this.o.queueMs;
  }

  private admit(): Release {
    this.inflight += 1;
    const admittedAt = performance.now();
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.inflight -= 1;
      this.sample(admittedAt, performance.now() - admittedAt);
      this.wake();
    };
  }

  private sample(admittedAt: number, ms: number): void {
    const o = this.o;
    if (ms > o.targetMs) {
      if (admittedAt > this.lastCut) this.cut(Math.max(MAX_CUT, o.targetMs / ms), performance.now());
    } else if (this.limitValue < o.initialLimit) {
      this.limitValue = Math.min(o.initialLimit, this.limitValue + 1);
    } else if ((this.inflight + 1) * 2 >= this.limitValue) {
      this.limitValue = Math.min(o.maxLimit, this.limitValue + 1 / this.limitValue);
    }
  }

  private cut(factor: number, now: number): void {
    this.limitValue = Math.max(this.o.minLimit, this.limitValue * factor);
    this.lastCut = now;
  }

  /** Hands free slots to the oldest waiters. */
  private wake(): void {
    while (this.waiters.length > 0 && this.inflight < this.limit) {
      const waiter = this.waiters.shift() as Waiter;
      clearTimeout(waiter.timer);
      waiter.resolve(this.admit());
    }
    if (this.waiters.length === 0) this.queuedSince = undefined;
  }
}
