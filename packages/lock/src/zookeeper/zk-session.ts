// One ZooKeeper session of a ZooKeeperLock: the node-zookeeper-client connection with its guards, a new
// session after expiry, and the requests the lock recipe makes, each bounded by the session timeout.
import { randomUUID } from 'node:crypto';
import type { Socket } from 'node:net';
import type { Client, Event, OpResult, Stat } from 'node-zookeeper-client';
import { LockUnavailableError } from '../errors.ts';
import { withDeadline } from '../waiting.ts';

export type ZkModule = typeof import('node-zookeeper-client');

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

/** A node just created: its path, creation zxid, and the read of its parent's children sent behind it. */
export interface Listed {
  path: string;
  czxid: Buffer;
  /** The queue as the node joined it (asked in the same round trip; its own answer, to be bounded). */
  children: Promise<string[]>;
}

/** A protected create's name prefix: unique to one acquisition, so its node can be found (and removed) by it. */
export function protectedPrefix(): string {
  return `_c_${randomUUID()}-lock-`;
}

/** The client of a session, connected (or LockUnavailableError after the session timeout). */
export function openClient(zookeeper: ZkModule, connect: string, timeoutMs: number): Promise<Client> {
  const zk = zookeeper.createClient(connect, { sessionTimeout: timeoutMs, spinDelay: 200 });
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

/**
 * The lock's ZooKeeper session. Its expiry calls `onExpired` (every hold ends with it) and opens a new
 * session for later acquisitions. Every request is bounded by the session timeout: one sent on a
 * session that then expired is never answered (its client is closed), and nothing may wait on it forever.
 */
export class ZkSession {
  private closed = false;
  private handshakeGuard: NodeJS.Timeout | undefined;

  constructor(
    private readonly zookeeper: ZkModule,
    private zk: Client,
    private readonly connect: string,
    /** The negotiated session timeout in ms: the holds' lease. */
    readonly timeoutMs: number,
    private readonly onExpired: () => void,
  ) {
    this.watch(zk);
  }

  /** The current connection; a different one after an expiry (a check against it tells). */
  get client(): Client {
    return this.zk;
  }

  close(): void {
    this.closed = true;
    clearInterval(this.handshakeGuard);
    this.zk.close();
  }

  children(path: string): Promise<string[]> {
    const request = new Promise<string[]>((resolve, reject) => {
      this.zk.getChildren(path, undefined, (err, children) => (err ? reject(err) : resolve(children)));
    });
    return withDeadline(request, this.timeoutMs);
  }

  exists(path: string, watcher?: (event: Event) => void): Promise<Stat | null> {
    const request = new Promise<Stat | null>((resolve, reject) => {
      this.zk.exists(path, watcher, (err, stat) => (err ? reject(err) : resolve(stat)));
    });
    return withDeadline(request, this.timeoutMs);
  }

  /** Deletes a node; false when it was not there (a delete whose reply was lost counts as ours). */
  async remove(path: string): Promise<boolean> {
    const { Exception } = this.zookeeper;
    for (let attempt = 0; ; attempt++) {
      const code = await withDeadline(
        new Promise<number | undefined | null>((resolve) =>
          this.zk.remove(path, -1, (err) => resolve(err ? this.code(err) : null)),
        ),
        this.timeoutMs,
      ).catch(() => Exception.CONNECTION_LOSS);
      if (code === null) return true;
      // A delete whose reply was lost with the connection may have happened: gone now counts as ours.
      if (code === Exception.NO_NODE) return attempt > 0;
      if (code !== Exception.CONNECTION_LOSS || attempt >= 2) {
        throw new LockUnavailableError(path, new Error(`ZooKeeper error ${code}`), 'ZooKeeper');
      }
    }
  }

  /**
   * Creates an ephemeral sequential node named `prefix` + sequence (protectedPrefix), the parents if
   * missing, in one round trip: its creation zxid, and the queue as it joined it. Finds it again by
   * its prefix after a lost reply.
   */
  async createListed(parent: string, prefix: string): Promise<Listed> {
    const { Exception } = this.zookeeper;
    for (let attempt = 0; ; attempt++) {
      try {
        return await this.createAndList(parent, prefix);
      } catch (err) {
        const code = this.code(err);
        if (code === Exception.NO_NODE && attempt < 3) {
          await this.mkdirp(parent);
          continue;
        }
        if (code !== Exception.CONNECTION_LOSS || attempt >= 3) throw err;
        // Protected mode: the create may have happened before the connection dropped.
        const children = await this.retrying(() => this.children(parent));
        const found = children.find((c) => c.startsWith(prefix));
        const stat = found ? await this.retrying(() => this.exists(`${parent}/${found}`)) : null;
        if (found && stat) {
          return { path: `${parent}/${found}`, czxid: stat.czxid, children: Promise.resolve(children) };
        }
      }
    }
  }

  /** Deletes the node a protected create under `parent` made with `prefix`, if there is one. */
  async removeProtected(parent: string, prefix: string): Promise<void> {
    let children: string[];
    try {
      children = await this.children(parent);
    } catch (err) {
      if (this.code(err) === this.zookeeper.Exception.NO_NODE) return;
      throw err;
    }
    const found = children.find((c) => c.startsWith(prefix));
    if (found) await this.remove(`${parent}/${found}`);
  }

  /** Runs an idempotent read again (up to 5 times, 200 ms apart) when the connection was lost. */
  async retrying<T>(read: () => Promise<T>): Promise<T> {
    for (let attempt = 0; ; attempt++) {
      try {
        return await read();
      } catch (err) {
        if (this.code(err) !== this.zookeeper.Exception.CONNECTION_LOSS || attempt >= 4) throw err;
        await new Promise((resolve) => setTimeout(resolve, 200));
      }
    }
  }

  /** The ZooKeeper error code of err, undefined when it is no ZooKeeper exception. */
  code(err: unknown): number | undefined {
    return err instanceof this.zookeeper.Exception ? err.getCode() : undefined;
  }

  /**
   * The create as a multi with a setData of the parent: one transaction, so the setData's mzxid is
   * the node's czxid (node-zookeeper-client has no create2 to answer it). The parent's children are
   * asked right behind it on the same session, which ZooKeeper answers in order: after the create.
   */
  private async createAndList(parent: string, prefix: string): Promise<Listed> {
    const { CreateMode } = this.zookeeper;
    const created = new Promise<OpResult[]>((resolve, reject) => {
      this.zk
        .transaction()
        .create(`${parent}/${prefix}`, null, CreateMode.EPHEMERAL_SEQUENTIAL)
        .setData(parent, null, -1)
        .commit((err, results) => (err ? reject(err) : resolve(results)));
    });
    const children = this.children(parent);
    // Awaited by the caller only once the create is answered (or never, when it fails).
    children.catch(() => {});
    const [create, touch] = await withDeadline(created, this.timeoutMs);
    if (!create?.path || !touch?.stat) throw new Error('ZooKeeper multi answered without its results');
    return { path: create.path, czxid: touch.stat.mzxid, children };
  }

  private mkdirp(path: string): Promise<void> {
    const { Exception } = this.zookeeper;
    return new Promise<void>((resolve, reject) =>
      this.zk.mkdirp(path, (e) => (e && this.code(e) !== Exception.NODE_EXISTS ? reject(e) : resolve())),
    );
  }

  /**
   * Session expiry ends every hold now, and a new session is opened for later acquisitions (a
   * waiter whose node went with the session queues again). Also guards the session handshake.
   */
  private watch(zk: Client): void {
    const { State } = this.zookeeper;
    this.guardHandshake(zk);
    dropStaleBytes(zk);
    zk.on('state', (state: { code: number }) => {
      if (state.code !== State.EXPIRED.code || zk !== this.zk || this.closed) return;
      this.onExpired();
      zk.close();
      this.zk = this.zookeeper.createClient(this.connect, { sessionTimeout: this.timeoutMs, spinDelay: 200 });
      this.watch(this.zk);
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
      Math.max(100, Math.floor(this.timeoutMs / 6)),
    );
    this.handshakeGuard.unref();
  }
}

/**
 * node-zookeeper-client keeps the bytes of a reply not yet whole across a reconnect: a socket that
 * closed mid-packet (cut by the handshake guard, or by a ping timeout while the server was paused) left
 * them, and the next connection's first reply was read behind them, out of frame. Seen as an
 * uncaught "Unknown code: -685572093" thrown from the client's socket handler after a server pause.
 * The manager opens the next socket synchronously after announcing DISCONNECTED, before any of its
 * bytes can arrive, so dropping the leftovers there is safe.
 */
function dropStaleBytes(zk: Client): void {
  const manager = (zk as Client & ClientInternals).connectionManager;
  manager?.on('state', (state) => {
    if (state === DISCONNECTED) manager.pendingBuffer = null;
  });
}
