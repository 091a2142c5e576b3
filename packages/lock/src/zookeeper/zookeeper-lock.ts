// Reentrant distributed locks on ZooKeeper, Curator's InterProcessMutex recipe: an ephemeral sequential
// node per waiting owner, the lowest holds, each waiter watches its predecessor; the session is the lease.

import { performance } from 'node:perf_hooks';
import type { Event, Stat } from 'node-zookeeper-client';
import { LockUnavailableError } from '../errors.ts';
import type { LockEventObserver, ObtainRequest } from '../front-end.ts';
import { loadPeer } from '../optional-peer.ts';
import { newClientId } from '../owner.ts';
import { type Budget, type Queued, SessionLock } from '../session-lock.ts';
import { wakeableSleep, withDeadline } from '../waiting.ts';
import { openClient, protectedPrefix, type ZkModule, ZkSession } from './zk-session.ts';

/** Options of a ZooKeeperLock; every one is optional. */
export interface ZooKeeperLockOptions {
  /** ZooKeeper connect string `host:port[,host:port...]` (default `127.0.0.1:2181`). */
  connect?: string;
  /** Readable prefix of this client's id `<clientId>-<uuid>` (owner ids `<id>:<n>`): never shared. */
  clientId?: string;
  /**
   * Session timeout asked for (default 10 s; the server may grant less, within its min/max). The
   * session is every hold's lease: a client that dies loses its locks this long after.
   */
  sessionTimeoutMs?: number;
  /** Parent of every lock's node (default `/flashsale-lock`): lock `n` queues under `<root>/n`. */
  root?: string;
  /** Longest a waiter relies on its watch alone before reading the queue again (default 5 s). */
  heartbeatMs?: number;
  /**
   * Observes waits, hand-offs and holds (metrics), as LockClient's option of the same name. Called
   * synchronously; whatever it throws is ignored.
   */
  onEvent?: LockEventObserver;
}

/** A node this client created: its path and creation zxid (the fencing token). */
interface ZkNode {
  path: string;
  czxid: number;
}

const SEQUENCE_DIGITS = 10;

/**
 * Reentrant locks on ZooKeeper, as Curator's `InterProcessMutex`:
 * - an acquisition creates an ephemeral sequential node `<root>/<name>/_c_<uuid>-lock-<seq>`
 *   (protected mode: when the create's reply is lost, the node is found again by its uuid);
 * - the lowest sequence holds the lock (FIFO by arrival); each waiter watches only its predecessor
 *   (no herd); when the predecessor was the head, its delete is the hand-off (no re-read);
 * - re-entry per owner in the client; the session is the lease: its expiry ends every hold;
 * - the fencing token is the node's creation zxid, which increases across the ensemble, so it keeps
 *   increasing per lock name even when the lock's parent node is deleted and created again (its
 *   sequence numbers restart, zxids do not).
 *
 * A hold's `signal` aborts when the session expires, or cannot be confirmed for its timeout (the
 * server unreachable or hung), or the node is gone (checked every timeout/3 while held).
 *
 * @example
 * const locks = await ZooKeeperLock.connect({ connect: '127.0.0.1:2181' });
 * await locks.withLock('orders:42', { waitMs: 1000 }, async (hold) => write(hold.token));
 * await locks.close();
 */
export class ZooKeeperLock extends SessionLock<ZkNode> {
  protected override readonly serviceName = 'ZooKeeper';
  private readonly root: string;
  private readonly heartbeatMs: number;
  private readonly session: ZkSession;

  private constructor(
    private readonly zookeeper: ZkModule,
    session: (onExpired: () => void) => ZkSession,
    options: ZooKeeperLockOptions,
    sessionTimeoutMs: number,
  ) {
    super(newClientId(options.clientId), sessionTimeoutMs, 'zookeeper', options.onEvent);
    this.root = (options.root ?? '/flashsale-lock').replace(/\/+$/, '');
    this.heartbeatMs = options.heartbeatMs ?? 5000;
    this.session = session(() => this.loseAll('ZooKeeper session expired'));
  }

  /**
   * Connects (loading the optional `node-zookeeper-client` package only now) and waits for the
   * session; its negotiated timeout becomes the holds' lease.
   */
  static async connect(options: ZooKeeperLockOptions = {}): Promise<ZooKeeperLock> {
    const zookeeper = await loadPeer(
      'node-zookeeper-client',
      'ZooKeeper',
      () => import('node-zookeeper-client'),
    );
    const connect = options.connect ?? '127.0.0.1:2181';
    const zk = await openClient(zookeeper, connect, options.sessionTimeoutMs ?? 10_000);
    const timeoutMs = zk.getSessionTimeout();
    const session = (onExpired: () => void) => new ZkSession(zookeeper, zk, connect, timeoutMs, onExpired);
    return new ZooKeeperLock(zookeeper, session, options, timeoutMs);
  }

  /** True while someone holds the lock (or waits for it: a queue has a head whenever it has nodes). */
  async isLocked(name: string): Promise<boolean> {
    try {
      return (await this.session.children(this.parentOf(name))).length > 0;
    } catch (err) {
      if (this.session.code(err) === this.zookeeper.Exception.NO_NODE) return false;
      throw this.unavailable(name, err);
    }
  }

  /** The ensemble's health for /readyz: the session answers a read. */
  async ping(): Promise<void> {
    try {
      await withDeadline(this.session.exists('/'), this.sessionTtlMs / 2);
    } catch (err) {
      throw this.unavailable('ping', err);
    }
  }

  // --- SessionLock ---

  /** Closes the session: every node of this client goes at once. */
  protected async disconnect(): Promise<void> {
    this.session.close();
  }

  protected async enqueue(request: ObtainRequest, budget: Budget): Promise<Queued<ZkNode> | null> {
    const { name, signal } = request;
    const parent = this.parentOf(name);
    for (;;) {
      if (this.closed) throw this.unavailable(name, new Error('lock client closed'));
      const sentAt = performance.now();
      const prefix = protectedPrefix();
      // One round trip: the node, its creation zxid (the token) and the queue it joined (read behind it).
      const made = await this.creating(
        budget,
        () => this.session.createListed(parent, prefix),
        () => this.session.removeProtected(parent, prefix),
      ).catch((err: unknown) => {
        throw this.unavailable(name, err);
      });
      const node = made.path.slice(parent.length + 1);
      const own: ZkNode = { path: made.path, czxid: zxid(made.czxid) };
      let acquired = false;
      try {
        const read = () =>
          made.children.catch(() => this.session.retrying(() => this.session.children(parent)));
        const children = await this.bounded(budget, read).catch((err: unknown) => {
          // Our node is queued: a read unanswered past the wait's deadline is a wait run out, as in
          // waitTurn, not an unreachable service (which the create just reached).
          if (performance.now() >= budget.deadline) return null;
          throw this.unavailable(name, err);
        });
        if (!children) return null;
        const turn = await this.waitTurn(parent, node, children, budget, signal).catch((err: unknown) => {
          throw signal?.aborted ? err : this.unavailable(name, err);
        });
        if (turn === 'expired') continue;
        acquired = turn === 'acquired';
        // A node with a lower sequence was there when ours was created: it came by a release.
        const queued = children.some((c) => sequence(c) < sequence(node));
        return acquired ? { key: own, token: own.czxid, aliveFrom: sentAt, queued } : null;
      } finally {
        if (!acquired) await this.withdraw(budget, own, own.czxid);
      }
    }
  }

  protected remove(node: ZkNode, _token: number): Promise<boolean> {
    return this.session.remove(node.path);
  }

  protected async confirm(nodes: ZkNode[]): Promise<{ sentAt: number; held: boolean[] }> {
    const sentAt = performance.now();
    const session = this.session.client;
    const checks =
      nodes.length > 0 ? nodes.map((n) => this.session.exists(n.path)) : [this.session.exists('/')];
    const stats = await withDeadline(Promise.all(checks), this.sessionTtlMs / 3);
    if (session !== this.session.client) return { sentAt, held: nodes.map(() => false) };
    return { sentAt, held: nodes.map((n, i) => !!stats[i] && zxid((stats[i] as Stat).czxid) === n.czxid) };
  }

  // --- internals ---

  private parentOf(name: string): string {
    return `${this.root}/${name}`;
  }

  /**
   * Waits until our node is the lowest, until the budget's deadline (a try: one look). Watches the
   * predecessor (one watch per predecessor); its delete is the hand-off when it was the head, else
   * the queue is read again.
   */
  private async waitTurn(
    parent: string,
    node: string,
    first: string[],
    budget: Budget,
    signal: AbortSignal | undefined,
  ): Promise<'acquired' | 'timeout' | 'expired'> {
    let children = first;
    let watched: string | undefined;
    let fired = false;
    let wake: (() => void) | undefined;
    let stale = false;
    const { Event: ZkEvent } = this.zookeeper;
    // Only the predecessor's delete is a hand-off; any other event (a watch re-set after a
    // reconnect can report a change) just means: read the queue again and watch anew.
    const watcher = (event: Event) => {
      if (event.getPath() !== `${parent}/${watched}`) return;
      if (event.getType() === ZkEvent.NODE_DELETED) fired = true;
      else stale = true;
      wake?.();
    };
    // Bounded by the heartbeat too: a request on a session that just expired may never be answered.
    const look = <T>(op: () => Promise<T>) => this.bounded(budget, op, this.heartbeatMs);
    for (;;) {
      const queue = [...children].sort((a, b) => sequence(a) - sequence(b));
      const at = queue.indexOf(node);
      if (at < 0) return 'expired';
      if (at === 0) return 'acquired';
      if (budget.deadline <= performance.now()) return 'timeout';
      const predecessor = queue[at - 1] as string;
      if (predecessor !== watched) {
        watched = predecessor;
        fired = false;
        try {
          if (!(await look(() => this.session.exists(`${parent}/${predecessor}`, watcher)))) {
            children = await look(() => this.session.children(parent));
            continue;
          }
        } catch {
          // Connection lost for now: our node lives on with the session; look again after the heartbeat.
          watched = undefined;
        }
      }
      const pause = Math.max(0, Math.min(budget.deadline - performance.now(), this.heartbeatMs));
      if (!fired && !stale) await wakeableSleep(pause, signal, (w) => (wake = w));
      wake = undefined;
      if (fired && at === 1) return 'acquired';
      if (fired || stale) watched = undefined;
      stale = false;
      try {
        children = await look(() => this.session.children(parent));
      } catch {
        // Not reachable now: our node lives on with the session; look again after the heartbeat.
        if (performance.now() >= budget.deadline) return 'timeout';
      }
    }
  }

  private unavailable(name: string, err: unknown): unknown {
    const timedOut = (err as { code?: unknown } | null)?.code === 'ETIMEDOUT';
    if (err instanceof LockUnavailableError || (this.session.code(err) === undefined && !timedOut))
      return err;
    return new LockUnavailableError(name, err, `ZooKeeper (${(err as Error).message})`);
  }
}

/** The sequence suffix of a lock node (Curator sorts by it, ignoring the protection prefix). */
function sequence(node: string): number {
  return Number(node.slice(-SEQUENCE_DIGITS));
}

/** A zxid (8 bytes, big-endian) as a number: exact while the epoch stays below 2^21. */
function zxid(buf: Buffer): number {
  return Number(buf.readBigInt64BE(0));
}
