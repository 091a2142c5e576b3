// The common part of the locks whose lease is a client session (etcd lease, ZooKeeper session): re-entry
// per owner, handles kept valid by renewing the session, explicit leases, release of the last hold.
import { performance } from 'node:perf_hooks';
import { LockNotHeldError } from './errors.ts';
import { type LockEventObserver, LockFrontEnd, type ObtainRequest } from './front-end.ts';
import { type HandleOwner, LockHandle } from './handle.ts';
import { HoldTable, type ServerHold } from './hold-table.ts';
import type { LockPipeline } from './scripts.ts';
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
 * Base of the session-backed locks. A backend supplies: `enqueue` (create its key or node and wait
 * for its turn, or try once), `remove` (delete the key of a hold), `exists` (is the hold still on the
 * server), and a renewer that confirms the session and the held keys (run every TTL/3 while any lock
 * is held, like Redisson's watchdog). A handle whose session cannot be confirmed for a whole TTL
 * aborts its `signal` with LockLostError; so does one whose key was deleted.
 *
 * An explicit `leaseMs` is kept by this client: the hold is released when it runs out (and by the
 * server with the session if the client dies first).
 */
export abstract class SessionLock<K> extends LockFrontEnd implements HandleOwner {
  protected readonly holds = new HoldTable<K>();
  private readonly watchdog: Watchdog;
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

  /** Creates the owner's key and waits its turn (request.waitMs 0: one try); null when not had in time. */
  protected abstract enqueue(request: ObtainRequest): Promise<Queued<K> | null>;
  /** Deletes the hold's key; false when it was no longer there (the hold had been lost). */
  protected abstract remove(key: K, token: number): Promise<boolean>;
  /**
   * Confirms the session (one round trip) and whether each key is still held. Per key: true, false
   * (gone), or throws when the server could not be reached. `sentAt` is when the confirmation was sent.
   */
  protected abstract confirm(keys: K[]): Promise<{ sentAt: number; held: boolean[] }>;
  /** Closes the session (the server drops the client's keys with it) and the connection. */
  protected abstract disconnect(): Promise<void>;

  protected async obtain(request: ObtainRequest): Promise<LockHandle | null> {
    const { name, owner } = request;
    const started = performance.now();
    const held = this.live(this.holds.get(name, owner));
    if (held) {
      request.signal?.throwIfAborted();
      this.emit({ type: 'acquired', name, waitMs: performance.now() - started, handoff: false });
      return this.newHandle(held, request, performance.now());
    }
    const got = await this.enqueue(request);
    const waitMs = performance.now() - started;
    if (!got) {
      this.emit({ type: 'timeout', name, waitMs });
      return null;
    }
    this.emit({ type: 'acquired', name, waitMs, handoff: got.queued });
    const hold = this.holds.add(name, owner, got.key, got.token);
    return this.newHandle(hold, request, got.aliveFrom);
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

  async releaseHandle(handle: LockHandle): Promise<void> {
    this.forget(handle);
    const hold = this.holds.of(handle);
    if (hold && handle.lost) this.lose(handle, hold, 'lost before release');
    if (!hold || handle.lost) throw new LockNotHeldError(handle.name);
    hold.handles.delete(handle);
    if (hold.handles.size === 0) {
      this.holds.delete(handle.name, handle.owner, hold);
      if (!(await this.remove(hold.key, hold.token))) throw new LockNotHeldError(handle.name);
    }
    this.reportRelease(handle);
  }

  async extendHandle(handle: LockHandle, leaseMs: number): Promise<void> {
    const hold = this.holds.of(handle);
    if (handle.released || !hold || handle.lost) throw new LockNotHeldError(handle.name);
    const { sentAt, held } = await this.confirm([hold.key]);
    if (!held[0]) {
      this.lose(handle, hold, 'lock no longer held at extend');
      throw new LockNotHeldError(handle.name);
    }
    if (handle.watchdog) {
      handle.confirm(sentAt, this.sessionTtlMs);
      return;
    }
    handle.confirm(sentAt, leaseMs);
    this.armExpiry(handle, hold, leaseMs);
  }

  async remainingTtl(handle: LockHandle): Promise<number> {
    const hold = this.holds.of(handle);
    if (!hold || handle.released) return 0;
    const { held } = await this.confirm([hold.key]);
    return held[0] ? handle.validForMs : 0;
  }

  queueRenewal(_pipeline: LockPipeline, _handle: LockHandle, _leaseMs: number): void {
    throw new TypeError('a session lock is not renewed on a Redis pipeline');
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
    this.trackHold(handle);
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

  private forget(handle: LockHandle): void {
    if (handle.watchdog) this.watchdog.remove(handle);
    clearTimeout(this.expiryTimers.get(handle));
  }

  private lose(handle: LockHandle, hold: ServerHold<K>, reason: string): void {
    this.forget(handle);
    handle.markLost(reason);
    if (!hold.handles.delete(handle) || hold.handles.size > 0) return;
    this.holds.delete(handle.name, handle.owner, hold);
    this.remove(hold.key, hold.token).catch(() => {
      // Unreachable: the key goes with the session.
    });
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
