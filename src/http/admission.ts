// Admission control of orders in one API process: an adaptive concurrency limit (AIMD on each order's
// latency and the loop's saturation) before a short, bounded wait queue: overload is refused, not queued.

import { performance } from 'node:perf_hooks';
import type { AdmissionState } from '../metrics.ts';

/** Settings of {@link AdmissionControl} (config.admission: ADMISSION_* in src/config/sections.ts). */
export interface AdmissionOptions {
  /** The limit at start, and the level it climbs back to after congestion without needing load. */
  initialLimit: number;
  minLimit: number;
  maxLimit: number;
  /** An admitted order that takes longer than this (admission to answer) is a congestion signal. */
  targetMs: number;
  /** Longest wait for a slot in a burst. 0: never wait. */
  queueMs: number;
  /** Longest wait (at most `queueMs`) once excess demand has lasted `queueMs` (sustained overload). */
  overloadQueueMs: number;
  /** Most requests waiting at once (memory bound; a standing queue holds at most one limit's worth). */
  maxQueue: number;
  /** Event-loop delay above which nothing waits: a request without a free slot is refused. 0: ignored. */
  maxLagMs: number;
  /**
   * Event-loop utilization (0..1) at or above which the process is saturated: while it is, in a herd
   * (at least as many orders refused as completed), the limit is cut. 0: ignored.
   */
  maxUtilization: number;
  /**
   * What a saturated loop does to the limit. 'cut' (default): the herd rule above. 'hold' (the
   * waiting room on): nothing cuts it while the loop is saturated, neither that rule nor slow orders.
   * There a herd's polls, not the orders, fill the loop, and every order waits its turn in it: a
   * slow order says nothing of Redis or the locks, and a lower limit only gives the polls a larger
   * share (measured: the limit at its floor of 8 for a whole herd, 10.9-13.9x the ideal sell-out).
   */
  onSaturation?: 'cut' | 'hold';
}

/** What admission control reads of its own event loop (EventLoopLag). */
export interface LoopSignals {
  /** Mean event-loop delay (ms) of the last window. */
  lagMs(): number;
  /** Event-loop utilization (0..1) of the last window. */
  utilization(): number;
}

const QUIET_LOOP: LoopSignals = { lagMs: () => 0, utilization: () => 0 };

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
/** A saturated loop under excess demand cuts the limit by this factor, at most once per SATURATION_MS. */
const SATURATION_CUT = 0.8;
/** One verdict per window of the loop signals (EventLoopLag's), so each cut is judged by fresh evidence. */
const SATURATION_MS = 200;
/** Excess demand: an order was refused or waited for a slot this recently. */
const DEMAND_MEMORY_MS = 1000;

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
 * - in a herd (a window of SATURATION_MS in which at least as many orders were refused as
 *   completed) the limit is what decides how much of the process goes to orders and how much to
 *   refusing the rest. A saturated loop (utilization >= `maxUtilization`) stops its growth and cuts
 *   it by SATURATION_CUT once per window; an unsaturated loop grows it by 1/limit per fast
 *   completion (about one per round of orders). A refusal costs about
 *   a seventh of an order, so at four times capacity the refusals need nearly half of the process,
 *   and a limit that ignores them leaves the loop no time to answer them (measured: answers came
 *   tens of seconds late while the limit grew, every order "fast"). Short of a herd the rules
 *   above apply unchanged: a few refusals cost next to nothing, and on a machine whose neighbours
 *   starve this process its loop reads saturated whatever it admits; cutting or freezing the limit
 *   on that spiralled it to its floor and refused a twentieth to a fifth of a light load (measured
 *   in CI, k6 flash-sale at 150 orders/s);
 * - a burst may wait `queueMs`; once excess demand has lasted that long (a standing queue: overload,
 *   not a burst), new waiters get `overloadQueueMs` and the queue is capped at one limit's worth, so
 *   whatever cannot be served soon is refused on arrival, in microseconds, instead of after waiting;
 * - while the event loop lags more than `maxLagMs`, nothing waits (a waiter would only grow stale).
 *   Lag does not cut the limit: on a shared machine it also measures the neighbours' load, and a
 *   process starved by them would throttle itself to its floor (measured: capacity fell by 4/5);
 *   the latency of admitted orders already carries the lag that matters.
 */
export class AdmissionControl {
  private limitValue: number;
  private inflight = 0;
  /** Orders answered since start: the waiting room paces its line by this throughput. */
  private completedCount = 0;
  private readonly waiters: Waiter[] = [];
  /** clock() of the last cut: only orders admitted after it may cut again. */
  private lastCut = Number.NEGATIVE_INFINITY;
  /** clock() when an order was last refused or queued (excess demand). */
  private lastExcess = Number.NEGATIVE_INFINITY;
  /** clock() when the current stretch of excess demand began. */
  private excessSince = Number.NEGATIVE_INFINITY;
  /** Refusals and completions since `windowStart`: the share of refusals a saturation cut needs. */
  private refusedInWindow = 0;
  private completedInWindow = 0;
  private windowStart = Number.NEGATIVE_INFINITY;
  /** The last window held a herd: at least as many refusals as completions. */
  private herd = false;

  constructor(
    private readonly o: AdmissionOptions,
    private readonly loop: LoopSignals = QUIET_LOOP,
    /** Milliseconds on a monotonic clock (tests drive their own). */
    private readonly clock: () => number = () => performance.now(),
  ) {
    this.limitValue = o.initialLimit;
  }

  /** The current limit (whole orders). */
  get limit(): number {
    return Math.floor(this.limitValue);
  }

  /** Orders admitted and answered since start (monotonic). */
  get completed(): number {
    return this.completedCount;
  }

  /** Orders admitted and not yet answered. */
  get running(): number {
    return this.inflight;
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
    const now = this.clock();
    this.noteExcess(now);
    const refused = this.refusal(now);
    if (refused) return this.refused(refused);
    const waitMs = this.waitMs(this.standing(now));
    return new Promise((resolve) => {
      const waiter: Waiter = {
        resolve,
        timer: setTimeout(() => {
          this.waiters.splice(this.waiters.indexOf(waiter), 1);
          resolve(this.refused('queue_timeout'));
        }, waitMs),
      };
      this.waiters.push(waiter);
    });
  }

  /**
   * A slot now, or undefined without waiting: for a buyer who can be told at once where it stands
   * (a streaming buyer is held on its stream rather than silently in this queue).
   */
  tryAcquire(): Release | undefined {
    if (this.hasFreeSlot()) return this.admit();
    this.noteExcess(this.clock());
    return undefined;
  }

  /**
   * Why an order arriving now would be refused on arrival, or undefined if it would be admitted or
   * may wait. Lets the HTTP server refuse before it reads or parses the request (the order door's shed check).
   */
  refusalOnArrival(): ShedReason | undefined {
    if (this.hasFreeSlot()) return undefined;
    const now = this.clock();
    const refused = this.refusal(now);
    if (!refused) return undefined;
    this.noteExcess(now);
    return this.refused(refused);
  }

  /** Counts a refusal in the current window (a herd is judged by them) and passes its reason on. */
  private refused(reason: ShedReason): ShedReason {
    this.refusedInWindow += 1;
    return reason;
  }

  private hasFreeSlot(): boolean {
    return this.inflight < this.limit && this.waiters.length === 0;
  }

  /** With no free slot: the reason to refuse a new arrival at once, or undefined if it may wait. */
  private refusal(now: number): ShedReason | undefined {
    if (this.o.maxLagMs > 0 && this.loop.lagMs() > this.o.maxLagMs) return 'loop_lag';
    const standing = this.standing(now);
    const waitMs = this.waitMs(standing);
    const room = standing ? Math.min(this.o.maxQueue, this.limit) : this.o.maxQueue;
    if (waitMs <= 0 || this.waiters.length >= room) return 'queue_full';
    return undefined;
  }

  /** The longest a new waiter may wait: never longer in sustained overload than in a burst. */
  private waitMs(standing: boolean): number {
    return standing ? Math.min(this.o.overloadQueueMs, this.o.queueMs) : this.o.queueMs;
  }

  private noteExcess(now: number): void {
    if (now - this.lastExcess >= DEMAND_MEMORY_MS) this.excessSince = now;
    this.lastExcess = now;
  }

  /**
   * True once more orders than the limit admits have kept arriving for `queueMs` (with no second
   * without one): sustained overload, not a burst. Whether the queue happens to be empty at this
   * instant does not matter; a queue that drains and refills is still a standing one.
   */
  private standing(now: number): boolean {
    return now - this.lastExcess < DEMAND_MEMORY_MS && now - this.excessSince >= this.o.queueMs;
  }

  private admit(): Release {
    this.inflight += 1;
    const admittedAt = this.clock();
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.inflight -= 1;
      this.completedCount += 1;
      this.sample(admittedAt, this.clock());
      this.wake();
    };
  }

  private sample(admittedAt: number, now: number): void {
    const o = this.o;
    const ms = now - admittedAt;
    this.completedInWindow += 1;
    if (now - this.windowStart >= SATURATION_MS) this.closeWindow(now);
    if (ms > o.targetMs) {
      if (admittedAt > this.lastCut && !this.holding()) this.cut(Math.max(MAX_CUT, o.targetMs / ms), now);
    } else if (this.herd && now - this.lastExcess < DEMAND_MEMORY_MS) {
      // A herd: the loop's saturation, not the orders' latency, says whether there is room.
      if (!this.saturated()) this.limitValue = Math.min(o.maxLimit, this.limitValue + 1 / this.limitValue);
    } else if (this.limitValue < o.initialLimit) {
      this.limitValue = Math.min(o.initialLimit, this.limitValue + 1);
    } else if ((this.inflight + 1) * 2 >= this.limitValue) {
      this.limitValue = Math.min(o.maxLimit, this.limitValue + 1 / this.limitValue);
    }
  }

  /**
   * Ends the window of refusals and completions: a herd if at least as many orders were refused as
   * completed in it, and then, on a saturated loop, one cut. A window that began long ago (or never)
   * is no evidence: it only starts a fresh one.
   */
  private closeWindow(now: number): void {
    const fresh = now - this.windowStart < 2 * SATURATION_MS;
    this.herd = fresh && this.refusedInWindow > 0 && this.refusedInWindow >= this.completedInWindow;
    if (this.herd && this.saturated() && !this.holding()) this.cut(SATURATION_CUT, now);
    this.windowStart = now;
    this.refusedInWindow = 0;
    this.completedInWindow = 0;
  }

  /** True while a saturated loop holds the limit where it is (onSaturation 'hold'). */
  private holding(): boolean {
    return this.o.onSaturation === 'hold' && this.saturated();
  }

  private saturated(): boolean {
    return this.o.maxUtilization > 0 && this.loop.utilization() >= this.o.maxUtilization;
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
  }
}
