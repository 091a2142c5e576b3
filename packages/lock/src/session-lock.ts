// The common part of the locks whose lease is a client session (etcd lease, ZooKeeper session): re-entry
// per owner, handles kept valid by renewing the session, explicit leases, release of the last hold.
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import { LockNotHeldError, LockUnavailableError } from './errors.ts';
import type { Acquisition, LockEventObserver, ObtainRequest } from './front-end.ts';
import { LockHandle } from './handle.ts';
import { type Extended, HoldCore } from './hold-core.ts';
import { HoldTable, type ServerHold } from './hold-table.ts';
import { withDeadline } from './waiting.ts';
import { type BatchRenewer, Watchdog } from './watchdog.ts';

/** A key or node the backend created for an owner and now holds the lock with. */
export interface Queued<K> {
  key: K;
  /** Fencing token: the key's create revision (etcd) or the node's creation zxid (ZooKeeper). */
  token: number;
  /** Monotonic time from which the session was known alive for its whole TTL when the lock was had. */
  aliveFrom: number;
  /** True when it waited behind another key or node: the lock came by its predecessor's release. */
  queued: boolean;
}

/**
 * How long past its wait an acquisition's calls may still take: a try (waitMs 0) gets one round trip,
 * and a wait that ran out while queued still removes its entry before answering. A healthy etcd or
 * ZooKeeper answers in a few ms, but a client process saturated by its own load answers late: up to
 * 780 ms in the 2,000-order storm on the 2-core test machine (test/servers/orders.lock-backends). It
 * matches the service's send margin (SEND_LEASE_MS), which an order's budget already allows for.
 */
export const ROUND_TRIP_MS = 1000;

/** The time one acquisition has: its wait ends at `deadline`, its calls at `end` (ROUND_TRIP_MS later). */
export interface Budget {
  name: string;
  deadline: number;
  end: number;
}

/**
 * Base of the session-backed locks. A backend supplies: `enqueue` (create its key or node and wait
 * for its turn, or try once), `remove` (delete the key of a hold), `exists` (is the hold still on the
 * server), and a renewer that confirms the session and the held keys (run every TTL/3 while any lock
 * is held, like Redisson's watchdog). A handle whose session cannot be confirmed for a whole TTL
 * aborts its `signal` with LockLostError; so does one whose key was deleted.
 *
 * An explicit `leaseMs` is kept by this client: the hold is released when it runs out (and by the
 * server with the session if the client dies first).
 */
export abstract class SessionLock<K> extends HoldCore {
  protected readonly holds = new HoldTable<K>();
  protected readonly watchdog: Watchdog;
  private readonly expiryTimers = new WeakMap<LockHandle, NodeJS.Timeout>();
  /** Set by close(): no new acquisition starts. */
  protected closed = false;

  constructor(
    clientId: string,
    /** The session's TTL in ms: how long a hold stays valid after the session was last confirmed. */
    protected readonly sessionTtlMs: number,
    /** Kind of the handles (LockHandle.kind). */
    private readonly holdKind: string,
    onEvent?: LockEventObserver,
  ) {
    super(clientId, sessionTtlMs, onEvent);
    this.watchdog = new Watchdog(this.renewer(), sessionTtlMs);
  }

  /**
   * Creates the owner's key and waits its turn (request.waitMs 0: one try); null when not had in time.
   * The request's signal was not aborted when obtain called it.
   * Every remote call goes through `bounded`, `creating` or `withdraw` with `budget`.
   */
  protected abstract enqueue(request: ObtainRequest, budget: Budget): Promise<Queued<K> | null>;
  /** Deletes the hold's key; false when it was no longer there (the hold had been lost). */
  protected abstract remove(key: K, token: number): Promise<boolean>;
  /**
   * Confirms the session (one round trip) and whether each key is still held. Per key: true, false
   * (gone), or throws when the server could not be reached. `sentAt` is when the confirmation was sent.
   */
  protected abstract confirm(keys: K[]): Promise<{ sentAt: number; held: boolean[] }>;
  /** Closes the session (the server drops the client's keys with it) and the connection. */
  protected abstract disconnect(): Promise<void>;

  protected async obtain(request: ObtainRequest): Promise<Acquisition | null> {
    const { name, owner } = request;
    request.signal?.throwIfAborted();
    const held = this.live(this.holds.get(name, owner));
    if (held) return { handle: this.newHandle(held, request, performance.now()), handoff: false };
    const deadline = performance.now() + Math.max(0, request.waitMs);
    const got = await this.enqueue(request, { name, deadline, end: deadline + ROUND_TRIP_MS });
    if (!got) return null;
    const hold = this.holds.add(name, owner, got.key, got.token);
    return { handle: this.newHandle(hold, request, got.aliveFrom), handoff: got.queued };
  }

  /** Every hold of this client is lost (its session ended): abort their signals, forget them. */
  protected loseAll(reason: string): void {
    for (const hold of [...this.holds.values()]) {
      for (const handle of [...hold.handles]) this.lose(handle, hold, reason);
    }
  }

  /** Ends the client: renewal stops, every hold is lost now, then the session is closed (disconnect). */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.watchdog.stop();
    this.loseAll('lock client closed');
    await this.disconnect();
  }

  // --- HandleOwner ---

  protected async releaseHold(handle: LockHandle): Promise<void> {
    const hold = this.holds.of(handle);
    if (hold && handle.lost) this.lose(handle, hold, 'lost before release');
    if (!hold || handle.lost) throw new LockNotHeldError(handle.name);
    hold.handles.delete(handle);
    if (hold.handles.size === 0) {
      this.holds.delete(handle.name, handle.owner, hold);
      let removed: boolean;
      try {
        removed = await this.remove(hold.key, hold.token);
      } catch (err) {
        void this.discard(() => this.remove(hold.key, hold.token));
        throw err;
      }
      if (!removed) throw new LockNotHeldError(handle.name);
    }
  }

  /** Confirms the session and the hold's key; a kept-alive hold lasts the session TTL, else leaseMs. */
  protected async extendHold(handle: LockHandle, leaseMs: number): Promise<Extended> {
    const hold = this.holds.of(handle);
    if (!hold) return 'not_held';
    const { sentAt, held } = await this.confirm([hold.key]);
    if (!held[0]) return 'not_held';
    if (handle.watchdog) return { from: sentAt, leaseMs: this.sessionTtlMs };
    this.armExpiry(handle, hold, leaseMs);
    return { from: sentAt, leaseMs };
  }

  /** Stops the watchdog's renewal and the explicit lease's timer of a hold. */
  protected override stopRenewing(handle: LockHandle): void {
    super.stopRenewing(handle);
    clearTimeout(this.expiryTimers.get(handle));
  }

  /** A hold found gone: also dropped from the hold table (the last handle's key deleted). */
  protected override loseHold(handle: LockHandle, reason: string): void {
    const hold = this.holds.of(handle);
    if (hold) this.lose(handle, hold, reason);
    else super.loseHold(handle, reason);
  }

  async remainingTtl(handle: LockHandle): Promise<number> {
    const hold = this.holds.of(handle);
    if (!hold || handle.released) return 0;
    const { held } = await this.confirm([hold.key]);
    return held[0] ? handle.validForMs : 0;
  }

  // --- the acquisition's calls: bounded by its budget, and never leaving an entry behind ---

  /**
   * A read (or any call that leaves nothing on the server) of an acquisition, answered by the
   * budget's end, and at most a session TTL (a session that cannot answer in its TTL is lost anyway).
   * Unanswered by then: abandoned, LockUnavailableError. `capMs` bounds it tighter (a waiter's heartbeat).
   */
  protected async bounded<T>(budget: Budget, op: () => Promise<T>, capMs = this.sessionTtlMs): Promise<T> {
    const ms = Math.min(budget.end - performance.now(), capMs, this.sessionTtlMs);
    const noAnswer = () =>
      new LockUnavailableError(
        budget.name,
        new Error(`no answer within ${Math.max(0, Math.round(ms))} ms`),
        this.serviceName,
      );
    if (ms <= 0) throw noAnswer();
    let timer: NodeJS.Timeout | undefined;
    // Judged after the event loop took in what arrived meanwhile (setImmediate runs after its I/O
    // phase): a reply that came while this process was too busy to read it is not silence. Without
    // this, a client saturated by its own orders answered 86-336 503s in the 2,000-order storm.
    const late = new Promise<never>((_, reject) => {
      timer = setTimeout(() => setImmediate(() => reject(noAnswer())), ms);
    });
    try {
      // The race also hears an abandoned call's later failure, so it is never an unhandled rejection.
      return await Promise.race([op(), late]);
    } finally {
      clearTimeout(timer);
    }
  }

  /**
   * A call that creates the acquisition's entry (a key on our lease, an ephemeral node), bounded as
   * `bounded`. When it fails or is abandoned, the entry may exist or appear later, and our session
   * would keep it, blocking the lock for everyone: once the call settled, `sweep` removes whatever it
   * made (found by a name only this acquisition uses), retried until the service answers.
   */
  protected async creating<T>(
    budget: Budget,
    op: () => Promise<T>,
    sweep: () => Promise<unknown>,
  ): Promise<T> {
    const call = op();
    try {
      return await this.bounded(budget, () => call);
    } catch (err) {
      void call.then(
        () => this.discard(sweep),
        () => this.discard(sweep),
      );
      throw err;
    }
  }

  /**
   * Removes an acquisition's entry that will not become a hold: waits for the removal within the
   * budget, and leaves it running in the background (retried, `discard`) past it.
   */
  protected async withdraw(budget: Budget, key: K, token: number): Promise<void> {
    const removing = this.discard(() => this.remove(key, token));
    await this.bounded(budget, () => removing).catch(() => {});
  }

  /**
   * Runs a removal until the service answers it (removed, or already gone). Our session can outlive an
   * outage and keep an entry nobody will release, so a failed removal is never just dropped. Ends
   * without it once the client is closed (the session goes, and its entries with it). Never rejects.
   */
  private async discard(remove: () => Promise<unknown>): Promise<void> {
    for (let pause = 100; !this.closed; pause = Math.min(2 * pause, this.sessionTtlMs / 3)) {
      try {
        await withDeadline(remove(), this.sessionTtlMs);
        return;
      } catch {
        await sleep(pause, undefined, { ref: false });
      }
    }
  }

  // --- internals ---

  /** The hold if it still has a live handle; a hold whose handles were all lost is dropped. */
  private live(hold: ServerHold<K> | undefined): ServerHold<K> | undefined {
    if (!hold) return undefined;
    for (const handle of [...hold.handles]) if (handle.lost) this.lose(handle, hold, 'lost');
    return hold.handles.size > 0 ? hold : undefined;
  }

  private newHandle(hold: ServerHold<K>, request: ObtainRequest, aliveFrom: number): LockHandle {
    const { name, owner, leaseMs, keepAlive } = request;
    const count = hold.handles.size + 1;
    const from = keepAlive ? aliveFrom : performance.now();
    const handle = new LockHandle(
      this,
      name,
      owner,
      hold.token,
      count,
      keepAlive ? this.sessionTtlMs : leaseMs,
      keepAlive,
      Math.min(from, aliveFrom + this.sessionTtlMs - leaseMs),
      this.holdKind,
    );
    hold.handles.add(handle);
    if (keepAlive) this.watchdog.add(handle);
    else this.armExpiry(handle, hold, leaseMs);
    return handle;
  }

  /** An explicit lease: when it runs out the handle is lost, and the last handle's key is deleted. */
  private armExpiry(handle: LockHandle, hold: ServerHold<K>, leaseMs: number): void {
    clearTimeout(this.expiryTimers.get(handle));
    const timer = setTimeout(() => this.lose(handle, hold, 'lease expired'), leaseMs);
    timer.unref();
    this.expiryTimers.set(handle, timer);
  }

  private lose(handle: LockHandle, hold: ServerHold<K>, reason: string): void {
    this.stopRenewing(handle);
    handle.markLost(reason);
    if (!hold.handles.delete(handle) || hold.handles.size > 0) return;
    this.holds.delete(handle.name, handle.owner, hold);
    void this.discard(() => this.remove(hold.key, hold.token));
  }

  /** The watchdog's renewal: the session and every held key confirmed in one round. */
  private renewer(): BatchRenewer {
    return async (handles) => {
      const holds = handles.map((h) => this.holds.of(h));
      const keys = holds.flatMap((h) => (h ? [h.key] : []));
      try {
        const { sentAt, held } = await this.confirm(keys);
        let i = 0;
        return holds.map((h) => {
          if (!h) return 'lost';
          return held[i++] ? { from: sentAt } : 'lost';
        });
      } catch {
        return handles.map(() => 'unreachable');
      }
    };
  }
}
