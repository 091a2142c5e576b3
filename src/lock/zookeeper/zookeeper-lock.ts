// Reentrant distributed locks on ZooKeeper, Curator's InterProcessMutex recipe: an ephemeral sequential
// node per waiting owner, the lowest holds, each waiter watches its predecessor; the session is the lease.

import { randomUUID } from 'node:crypto';
import type { Socket } from 'node:net';
import { performance } from 'node:perf_hooks';
import type { Client, Event, Stat } from 'node-zookeeper-client';
import { LockUnavailableError } from '../errors.ts';
import type { LockEventObserver, ObtainRequest } from '../front-end.ts';
import { newClientId } from '../owner.ts';
import { type Queued, SessionLock } from '../session-lock.ts';
import { wakeableSleep, withDeadline } from '../waiting.ts';

type ZkModule = typeof import('node-zookeeper-client');

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
 * The one internal of node-zookeeper-client 1.1.x the connection guards use (its ConnectionManager):
 * the connection state, its changes, the current socket and the bytes of a packet not yet whole.
 * The package is pinned and unmaintained since 2022.
 */
interface ClientInternals {
  connectionManager?: {
    state: number;
    socket?: Socket;
    pendingBuffer: Buffer | null;
    on(event: 'state', listener: (state: number) => void): void;
  };
}
/** ConnectionManager.STATES.DISCONNECTED: the socket closed; the next one is opened right after. */
const DISCONNECTED = 0;
/** ConnectionManager.STATES.CONNECTING: the ConnectRequest is sent or about to be, no answer yet. */
const HANDSHAKING = 1;

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
  private readonly root: string;
  private readonly heartbeatMs: number;
  private closed = false;
  private handshakeGuard: NodeJS.Timeout | undefined;

  private constructor(
    private readonly zookeeper: ZkModule,
    private zk: Client,
    private readonly options: ZooKeeperLockOptions,
    sessionTimeoutMs: number,
  ) {
    super(newClientId(options.clientId), sessionTimeoutMs, 'zookeeper', options.onEvent);
    this.root = (options.root ?? '/flashsale-lock').replace(/\/+$/, '');
    this.heartbeatMs = options.heartbeatMs ?? 5000;
    this.watchSession(zk);
  }

  /**
   * Connects (loading the optional `node-zookeeper-client` package only now) and waits for the
   * session; its negotiated timeout becomes the holds' lease.
   */
  static async connect(options: ZooKeeperLockOptions = {}): Promise<ZooKeeperLock> {
    const zookeeper = await import('node-zookeeper-client');
    const zk = await openSession(zookeeper, options);
    return new ZooKeeperLock(zookeeper, zk, options, zk.getSessionTimeout());
  }

  /** True while someone holds the lock (or waits for it: a queue has a head whenever it has nodes). */
  async isLocked(name: string): Promise<boolean> {
    try {
      return (await this.children(this.parentOf(name))).length > 0;
    } catch (err) {
      if (this.code(err) === this.zookeeper.Exception.NO_NODE) return false;
      throw this.unavailable(name, err);
    }
  }

  /** The ensemble's health for /readyz: the session answers a read. */
  async ping(): Promise<void> {
    try {
      await withDeadline(this.exists('/'), this.sessionTtlMs / 2);
    } catch (err) {
      throw this.unavailable('ping', err);
    }
  }

  /** Closes the session: every node of this client goes at once. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.stopRenewing();
    clearInterval(this.handshakeGuard);
    this.loseAll('lock client closed');
    this.zk.close();
  }

  // --- SessionLock ---

  protected async enqueue(request: ObtainRequest): Promise<Queued<ZkNode> | null> {
    const { name, signal } = request;
    signal?.throwIfAborted();
    const deadline = performance.now() + Math.max(0, request.waitMs);
    const parent = this.parentOf(name);
    for (;;) {
      if (this.closed) throw this.unavailable(name, new Error('lock client closed'));
      const sentAt = performance.now();
      let own: ZkNode;
      let children: string[];
      try {
        const path = await this.createProtected(parent);
        const [list, stat] = await this.retrying(() =>
          Promise.all([this.children(parent), this.exists(path)]),
        );
        if (!stat) continue; // our session expired right after the create: start again
        own = { path, czxid: zxid(stat.czxid) };
        children = list;
      } catch (err) {
        throw this.unavailable(name, err);
      }
      const node = own.path.slice(parent.length + 1);
      let acquired = false;
      try {
        const turn = await this.waitTurn(
          parent,
          node,
          children,
          request.waitMs > 0 ? deadline : 0,
          signal,
        ).catch((err: unknown) => {
          throw signal?.aborted ? err : this.unavailable(name, err);
        });
        if (turn === 'expired') continue;
        acquired = turn === 'acquired';
        // A node with a lower sequence was there when ours was created: it came by a release.
        const queued = children.some((c) => sequence(c) < sequence(node));
        return acquired ? { key: own, token: own.czxid, aliveFrom: sentAt, queued } : null;
      } finally {
        if (!acquired) await this.remove(own, own.czxid).catch(() => {});
      }
    }
  }

  protected async remove(node: ZkNode, _token: number): Promise<boolean> {
    const { Exception } = this.zookeeper;
    for (let attempt = 0; ; attempt++) {
      const code = await withDeadline(
        new Promise<number | undefined | null>((resolve) =>
          this.zk.remove(node.path, -1, (err) => resolve(err ? this.code(err) : null)),
        ),
        this.sessionTtlMs,
      ).catch(() => Exception.CONNECTION_LOSS);
      if (code === null) return true;
      // A delete whose reply was lost with the connection may have happened: gone now counts as ours.
      if (code === Exception.NO_NODE) return attempt > 0;
      if (code !== Exception.CONNECTION_LOSS || attempt >= 2) {
        throw new LockUnavailableError(node.path, new Error(`ZooKeeper error ${code}`), 'ZooKeeper');
      }
    }
  }

  protected async confirm(nodes: ZkNode[]): Promise<{ sentAt: number; held: boolean[] }> {
    const sentAt = performance.now();
    const session = this.zk;
    const checks = nodes.length > 0 ? nodes.map((n) => this.exists(n.path)) : [this.exists('/')];
    const stats = await withDeadline(Promise.all(checks), this.sessionTtlMs / 3);
    if (session !== this.zk) return { sentAt, held: nodes.map(() => false) };
    return { sentAt, held: nodes.map((n, i) => !!stats[i] && zxid((stats[i] as Stat).czxid) === n.czxid) };
  }

  // --- internals ---

  private parentOf(name: string): string {
    return `${this.root}/${name}`;
  }

  /**
   * Waits until our node is the lowest. Watches the predecessor (one watch per predecessor); its
   * delete is the hand-off when it was the head, else the queue is read again. deadline 0: one look.
   */
  private async waitTurn(
    parent: string,
    node: string,
    first: string[],
    deadline: number,
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
    for (;;) {
      const queue = [...children].sort((a, b) => sequence(a) - sequence(b));
      const at = queue.indexOf(node);
      if (at < 0) return 'expired';
      if (at === 0) return 'acquired';
      const left = deadline - performance.now();
      if (left <= 0) return 'timeout';
      const predecessor = queue[at - 1] as string;
      if (predecessor !== watched) {
        watched = predecessor;
        fired = false;
        try {
          // Bounded: a request on a session that just expired may never be answered.
          if (!(await withDeadline(this.exists(`${parent}/${predecessor}`, watcher), this.heartbeatMs))) {
            children = await withDeadline(this.children(parent), this.heartbeatMs);
            continue;
          }
        } catch {
          // Connection lost for now: our node lives on with the session; look again after the heartbeat.
          watched = undefined;
        }
      }
      if (!fired && !stale) await wakeableSleep(Math.min(left, this.heartbeatMs), signal, (w) => (wake = w));
      wake = undefined;
      if (fired && at === 1) return 'acquired';
      if (fired || stale) watched = undefined;
      stale = false;
      try {
        children = await withDeadline(this.children(parent), this.heartbeatMs);
      } catch {
        // Not reachable now: our node lives on with the session; look again after the heartbeat.
        if (performance.now() >= deadline) return 'timeout';
      }
    }
  }

  /** Creates our ephemeral sequential node, the parents if missing; finds it again after a lost reply. */
  private async createProtected(parent: string): Promise<string> {
    const { CreateMode, Exception } = this.zookeeper;
    const prefix = `_c_${randomUUID()}-lock-`;
    for (let attempt = 0; ; attempt++) {
      try {
        return await new Promise<string>((resolve, reject) => {
          this.zk.create(`${parent}/${prefix}`, null, CreateMode.EPHEMERAL_SEQUENTIAL, (err, path) =>
            err ? reject(err) : resolve(path),
          );
        });
      } catch (err) {
        const code = this.code(err);
        if (code === Exception.NO_NODE && attempt < 3) {
          await new Promise<void>((resolve, reject) =>
            this.zk.mkdirp(parent, (e) =>
              e && this.code(e) !== Exception.NODE_EXISTS ? reject(e) : resolve(),
            ),
          );
          continue;
        }
        if (code !== Exception.CONNECTION_LOSS || attempt >= 3) throw err;
        // Protected mode: the create may have happened before the connection dropped.
        const found = (await this.retrying(() => this.children(parent))).find((c) => c.startsWith(prefix));
        if (found) return `${parent}/${found}`;
      }
    }
  }

  /** Runs an idempotent read again (up to 5 times, 200 ms apart) when the connection was lost. */
  private async retrying<T>(read: () => Promise<T>): Promise<T> {
    for (let attempt = 0; ; attempt++) {
      try {
        return await read();
      } catch (err) {
        if (this.code(err) !== this.zookeeper.Exception.CONNECTION_LOSS || attempt >= 4) throw err;
        await new Promise((resolve) => setTimeout(resolve, 200));
      }
    }
  }

  // Every request is bounded by the session timeout: one sent on a session that then expired is
  // never answered (its client is closed), and nothing may wait on it forever.

  private children(path: string): Promise<string[]> {
    const request = new Promise<string[]>((resolve, reject) => {
      this.zk.getChildren(path, undefined, (err, children) => (err ? reject(err) : resolve(children)));
    });
    return withDeadline(request, this.sessionTtlMs);
  }

  private exists(path: string, watcher?: (event: Event) => void): Promise<Stat | null> {
    const request = new Promise<Stat | null>((resolve, reject) => {
      this.zk.exists(path, watcher, (err, stat) => (err ? reject(err) : resolve(stat)));
    });
    return withDeadline(request, this.sessionTtlMs);
  }

  /**
   * Session expiry ends every hold now, and a new session is opened for later acquisitions (a
   * waiter whose node went with the session queues again). Also guards the session handshake.
   */
  private watchSession(zk: Client): void {
    const { State } = this.zookeeper;
    this.guardHandshake(zk);
    this.dropStaleBytes(zk);
    zk.on('state', (state: { code: number }) => {
      if (state.code !== State.EXPIRED.code || zk !== this.zk || this.closed) return;
      this.loseAll('ZooKeeper session expired');
      zk.close();
      this.zk = this.zookeeper.createClient(this.options.connect ?? '127.0.0.1:2181', {
        sessionTimeout: this.sessionTtlMs,
        spinDelay: 200,
      });
      this.watchSession(this.zk);
      this.zk.connect();
    });
  }

  /**
   * node-zookeeper-client (1.1.x) puts no timeout on the session handshake: its connect timeout ends
   * when the TCP connection is up, and its socket timeout is armed only once the server answered. A
   * ZooKeeper restarting after a kill -9 accepts connections while it loads its data, and a
   * ConnectRequest it took then is sometimes never answered nor closed: the client waits on that
   * socket forever, its session expires on the server unseen, and every request and waiter of the
   * client hangs (one restart in two or three on a busy machine). As the Java client does (no
   * answer within its read timeout: a new connection), a handshake unanswered for a sixth to a third
   * of the session timeout is cut: destroying the socket makes the client connect again with the same
   * session id and password, which the restarted server accepts while the session lives (sessions
   * are restored from its data dir with a fresh timeout), or answers as expired (a new session then).
   */
  private guardHandshake(zk: Client): void {
    clearInterval(this.handshakeGuard);
    let waiting: Socket | undefined;
    this.handshakeGuard = setInterval(
      () => {
        const manager = (zk as Client & ClientInternals).connectionManager;
        const socket = manager?.socket;
        const handshaking =
          manager?.state === HANDSHAKING && socket && !socket.connecting && !socket.destroyed;
        // Seen waiting at two checks in a row: unanswered for at least one interval.
        if (handshaking && socket === waiting) socket.destroy();
        waiting = handshaking ? socket : undefined;
      },
      Math.max(100, Math.floor(this.sessionTtlMs / 6)),
    );
    this.handshakeGuard.unref();
  }

  /**
   * node-zookeeper-client keeps the bytes of a reply not yet whole across a reconnect: a socket that
   * closed mid-packet (cut by the guard above, or by a ping timeout while the server was paused) left
   * them, and the next connection's first reply was read behind them, out of frame. Seen as an
   * uncaught "Unknown code: -685572093" thrown from the client's socket handler after a server pause.
   * The manager opens the next socket synchronously after announcing DISCONNECTED, before any of its
   * bytes can arrive, so dropping the leftovers there is safe.
   */
  private dropStaleBytes(zk: Client): void {
    const manager = (zk as Client & ClientInternals).connectionManager;
    manager?.on('state', (state) => {
      if (state === DISCONNECTED) manager.pendingBuffer = null;
    });
  }

  private code(err: unknown): number | undefined {
    return err instanceof this.zookeeper.Exception ? err.getCode() : undefined;
  }

  private unavailable(name: string, err: unknown): unknown {
    const timedOut = (err as { code?: unknown } | null)?.code === 'ETIMEDOUT';
    if (err instanceof LockUnavailableError || (this.code(err) === undefined && !timedOut)) return err;
    return new LockUnavailableError(name, err, `ZooKeeper (${(err as Error).message})`);
  }
}

/** Opens a session and waits until it is connected (or fails after the session timeout). */
function openSession(zookeeper: ZkModule, options: ZooKeeperLockOptions): Promise<Client> {
  const timeoutMs = options.sessionTimeoutMs ?? 10_000;
  const zk = zookeeper.createClient(options.connect ?? '127.0.0.1:2181', {
    sessionTimeout: timeoutMs,
    spinDelay: 200,
  });
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      zk.close();
      reject(new LockUnavailableError('connect', new Error('no ZooKeeper session'), 'ZooKeeper'));
    }, timeoutMs);
    zk.once('connected', () => {
      clearTimeout(timer);
      resolve(zk);
    });
    zk.connect();
  });
}

/** The sequence suffix of a lock node (Curator sorts by it, ignoring the protection prefix). */
function sequence(node: string): number {
  return Number(node.slice(-SEQUENCE_DIGITS));
}

/** A zxid (8 bytes, big-endian) as a number: exact while the epoch stays below 2^21. */
function zxid(buf: Buffer): number {
  return Number(buf.readBigInt64BE(0));
}
