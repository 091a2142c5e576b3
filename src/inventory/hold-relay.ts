// One process's shard holds on etcd or ZooKeeper, shared by its orders: the lock service sees one
// acquisition per run of a shard's orders in this process, not one queue entry per order.
import { performance } from 'node:perf_hooks';
import type { LockEventObserver, LockFrontEnd, LockHandle } from '@flashsale/lock';
import { RoundTripFloor } from './round-trip-floor.ts';

/** A turn at a shard: the hold's owner and token for reserve.lua, and done() once the script answered. */
export interface Turn {
  owner: string;
  token: number;
  /** Ends this order's use of the hold; the last user releases it (not awaited). Idempotent. */
  done(): void;
}

/** How a take() waits: `waitMs` 0 is a try (null at once unless the shard is free or in use here). */
export interface TakeOptions {
  waitMs: number;
  leaseMs: number;
}

/**
 * Orders one hold serves before it goes back to the lock service: with half the lease (the other
 * bound), how long orders of other processes and admin changes, queued on the service, wait behind
 * this one's stream of orders. Each end costs a release and an acquisition (5-16 ms each on the
 * loaded VM) while the shard's orders wait; at 128 the half-lease bound (2.5 s by default) is the
 * one that ends a hold during a sale (see docs/benchmarks.md for 32 against 128).
 */
export const MAX_USES = 128;

/** Validity a hold must have left to serve one more order: room for its reservation's round trip. */
const USE_MARGIN_MS = 1000;

interface Slot {
  hold: LockHandle | undefined;
  /** When the hold was had (monotonic ms). */
  since: number;
  /** The acquisition in flight (a round trip to the service); only one at a time. */
  pending: Promise<LockHandle | null> | undefined;
  /** The acquisition in flight is a try (waitMs 0): it answers within one round trip. */
  pendingTry: boolean;
  /** The release in flight: nothing starts an acquisition before it is answered. */
  releasing: boolean;
  /** Orders using the hold now, and since it was had. */
  users: number;
  uses: number;
  /** Orders waiting for the hold to go back and be taken again (waitMs > 0), oldest first. */
  waiters: Array<() => void>;
}

/**
 * The shard locks of one process on a session-lock service. Such a lock takes each owner's turn by a
 * round trip (a key put, a node created) and gives it by another (its delete seen by the next
 * waiter's watch), so a queue of orders on the service is a serial chain of round trips, a few ms
 * each (tens on a loaded machine), while the order itself is one atomic reserve.lua call. So a
 * shard's lock is taken once for the orders of this process that want it at the same time:
 * - on a free shard an order takes the lock (one round trip); orders arriving while that acquisition
 *   is in flight, or while the hold is in use, use the same hold: no round trip, no queue entry;
 * - the last user releases the hold (not awaited by its order); a hold serves at most MAX_USES
 *   orders, for half its lease and while valid USE_MARGIN_MS more; orders past that wait (or, trying,
 *   are busy) until it is released, then take the lock anew, behind anyone queued on the service.
 * The lock still excludes every other process and every admin change from the shard while this
 * process's orders reserve on it; among themselves they need no exclusion, since each reservation is
 * one atomic script, and reserve.lua checks the hold's token against the shard's fence as before.
 */
export class HoldRelay {
  private readonly slots = new Map<string, Slot>();
  /** Tries that got the lock: each one round trip to the service. */
  private readonly tries = new RoundTripFloor();

  constructor(
    private readonly locks: LockFrontEnd,
    /** The service's lock metrics: an order that uses a hold is reported as having acquired it. */
    private readonly onEvent?: LockEventObserver,
  ) {}

  /** A turn at lock `name` within `waitMs` (null: busy). Lock errors are the service's (LockError). */
  async take(name: string, o: TakeOptions): Promise<Turn | null> {
    const slot = this.slot(name);
    const since = performance.now();
    const deadline = since + Math.max(0, o.waitMs);
    for (;;) {
      const { hold } = slot;
      if (hold && this.usable(slot, hold)) return this.use(name, slot, hold, since);
      // Lost, or past its bound, with nobody using it: back to the service (then taken anew below).
      if (hold && slot.users === 0) this.release(name, slot, hold);
      let got: LockHandle | null | undefined;
      if (slot.pending && (slot.pendingTry || o.waitMs > 0)) {
        // An acquisition in flight: its hold serves this order too. A try joins only another try's
        // (one round trip); a wait no longer than its own deadline.
        got =
          o.waitMs > 0
            ? await Promise.race([slot.pending, this.until(deadline, slot.pending)])
            : await slot.pending;
      } else if (!slot.hold && !slot.releasing && !slot.pending) {
        got = await this.acquire(name, slot, deadline - performance.now(), o.leaseMs);
      } else if (await this.released(slot, deadline)) {
        // In use past its bound, or going back: now released; look again.
        continue;
      }
      if (got) continue;
      if (got === undefined) this.onEvent?.({ type: 'timeout', name, waitMs: performance.now() - since });
      return null;
    }
  }

  /** Resolves undefined at `deadline` (at once for a try) unless `pending` settled first. */
  private until(deadline: number, pending: Promise<unknown>): Promise<undefined> {
    return new Promise((resolve) => {
      const timer = setTimeout(() => resolve(undefined), Math.max(0, deadline - performance.now()));
      void pending.finally(() => clearTimeout(timer)).catch(() => {});
    });
  }

  private slot(name: string): Slot {
    let slot = this.slots.get(name);
    if (!slot) {
      slot = {
        hold: undefined,
        since: 0,
        pending: undefined,
        pendingTry: false,
        releasing: false,
        users: 0,
        uses: 0,
        waiters: [],
      };
      this.slots.set(name, slot);
    }
    return slot;
  }

  /**
   * The acquisition's own order always uses its hold (as one order per hold did); a further one
   * only within the bounds, and while the hold is known valid for USE_MARGIN_MS more (the library's
   * view: its lease, and the session confirmed).
   */
  private usable(slot: Slot, hold: LockHandle): boolean {
    if (slot.uses === 0) return true;
    const young = performance.now() - slot.since < hold.leaseMs / 2;
    return !hold.lost && slot.uses < MAX_USES && young && hold.validForMs > USE_MARGIN_MS;
  }

  /** The service's round trip as this process sees it at its fastest lately (RoundTripFloor), 0 before any. */
  roundTripMs(): number {
    return this.tries.value(performance.now());
  }

  /** Takes the lock on the service for this process; null when not had within waitMs. */
  private async acquire(name: string, slot: Slot, waitMs: number, leaseMs: number) {
    slot.pendingTry = !(waitMs > 0);
    slot.pending = this.locks.tryAcquire(name, { waitMs: Math.max(0, waitMs), leaseMs });
    const sent = performance.now();
    try {
      const hold = await slot.pending;
      if (hold && slot.pendingTry) this.tries.note(performance.now() - sent, performance.now());
      if (hold) {
        slot.hold = hold;
        slot.since = performance.now();
        slot.uses = 0;
      }
      return hold;
    } finally {
      slot.pending = undefined;
      // Not had: a waiter may try in its own time (its wait may be longer).
      if (!slot.hold) this.vacated(name, slot);
    }
  }

  /** This order uses the hold: the library reported its acquisition, a further use is reported here. */
  private use(name: string, slot: Slot, hold: LockHandle, since: number): Turn {
    slot.users += 1;
    slot.uses += 1;
    if (slot.uses > 1) {
      this.onEvent?.({ type: 'acquired', name, waitMs: performance.now() - since, handoff: false });
    }
    const from = performance.now();
    let done = false;
    return {
      owner: hold.owner,
      token: hold.token,
      done: () => {
        if (done) return;
        done = true;
        slot.users -= 1;
        if (slot.users > 0) {
          this.onEvent?.({ type: 'released', name, heldMs: performance.now() - from });
          return;
        }
        this.release(name, slot, hold);
      },
    };
  }

  /** The last user is done: the hold goes back to the service (its release event is the library's). */
  private release(name: string, slot: Slot, hold: LockHandle): void {
    slot.hold = undefined;
    slot.releasing = true;
    // Not awaited by the order; the slot waits for it, so that this process's next order does not
    // meet its own key or node still on the service and answer busy on a shard nobody holds.
    hold
      .release()
      .catch(() => {
        // Lost or unreachable: the hold ends with its lease (or the client's session) anyway.
      })
      .finally(() => {
        slot.releasing = false;
        this.vacated(name, slot);
      });
  }

  /** Waits until the slot may be taken again (true), or until `deadline` (false). */
  private released(slot: Slot, deadline: number): Promise<boolean> {
    const ms = deadline - performance.now();
    if (!(ms > 0)) return Promise.resolve(false);
    return new Promise((resolve) => {
      const wake = () => {
        clearTimeout(timer);
        resolve(true);
      };
      const timer = setTimeout(() => {
        const at = slot.waiters.indexOf(wake);
        if (at >= 0) slot.waiters.splice(at, 1);
        resolve(false);
      }, ms);
      slot.waiters.push(wake);
    });
  }

  /**
   * Nothing holds the slot any more: every waiter looks again (the first starts the acquisition, the
   * others join it); with none, the slot is forgotten (a sale's shards are many over a process's life).
   */
  private vacated(name: string, slot: Slot): void {
    if (slot.waiters.length === 0 && slot.users === 0 && !slot.pending) this.slots.delete(name);
    for (const wake of slot.waiters.splice(0)) wake();
  }
}
