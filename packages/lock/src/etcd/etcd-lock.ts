// Reentrant distributed locks on etcd: one lease per client shared by all its keys, a key per waiting
// owner under the lock's prefix, the oldest create revision holds, each waiter watches its predecessor.

import { performance } from 'node:perf_hooks';
import type { Etcd3 } from 'etcd3';
import { LockUnavailableError } from '../errors.ts';
import type { LockEventObserver, ObtainRequest } from '../front-end.ts';
import { loadPeer } from '../optional-peer.ts';
import { newClientId } from '../owner.ts';
import { type Budget, type Queued, SessionLock } from '../session-lock.ts';
import type { EtcdKey } from './etcd-key.ts';
import { EtcdLease } from './etcd-lease.ts';
import {
  type Ahead,
  nextEvent,
  type PredecessorWatch,
  putAndReadAhead,
  putIfFree,
  rangeEnd,
  readAhead,
  unwatch,
  watchDelete,
} from './etcd-queue.ts';

type EtcdModule = typeof import('etcd3');

/** Options of an EtcdLock; every one is optional. */
export interface EtcdLockOptions {
  /** etcd endpoints, with their scheme (default `http://127.0.0.1:2379`). */
  endpoints?: string | readonly string[];
  /** Readable prefix of this client's id `<clientId>-<uuid>` (owner ids `<id>:<n>`): never shared. */
  clientId?: string;
  /**
   * TTL of the client's one lease, in whole seconds (default 10). Every key of this client lives
   * on it: a client that dies loses its locks and its places in the queues this long after.
   */
  leaseTtlSeconds?: number;
  /** Prefix of every lock's keys (default `flashsale-lock/`): lock `n` keeps its queue under `<prefix>n/`. */
  prefix?: string;
  /**
   * Longest a waiter relies on its watch alone (default 1000 ms): it then reads its predecessor
   * again, so a watch stream that died with a reconnect (etcd3 issues #114, #78) costs at most this.
   */
  heartbeatMs?: number;
  /**
   * Observes waits, hand-offs and holds (metrics), as LockClient's option of the same name. Called
   * synchronously; whatever it throws is ignored.
   */
  onEvent?: LockEventObserver;
}

/**
 * Reentrant locks on etcd, the recipe of etcd's own `concurrency.Mutex` with a wait that never polls:
 * - one lease per client (granted once, kept alive by etcd3), shared by every key of the client;
 * - an acquisition puts `<prefix><name>/<leaseId>-<n>` in one transaction that also reads the queue;
 *   the key with the smallest create revision holds the lock (FIFO by arrival);
 * - a waiter watches only its predecessor's delete (no herd), from the revision it read the queue at,
 *   so a delete between the read and the watch is not missed; when the predecessor was the head, its
 *   delete is the hand-off (no re-read); a read every `heartbeatMs` covers dead watch streams;
 * - re-entry per owner in the client; the fencing token is the key's create revision, which
 *   increases across the whole etcd cluster;
 * - a hold's `signal` aborts when the lease cannot be confirmed for its TTL (keep-alive failing, or
 *   answered TTL 0: etcd3 issue #110) or when its key is gone, checked every TTL/3 while held.
 *
 * `tryAcquire` with no wait puts its key only if it would be first, else deletes it: it never barges
 * past a queued waiter. Errors: LockAcquireTimeoutError (held until waitMs ran out),
 * LockUnavailableError (etcd unreachable).
 *
 * @example
 * const locks = await EtcdLock.connect({ endpoints: 'http://127.0.0.1:2379' });
 * await locks.withLock('orders:42', { waitMs: 1000 }, async (hold) => write(hold.token));
 * await locks.close();
 */
export class EtcdLock extends SessionLock<EtcdKey> {
  protected override readonly serviceName = 'etcd';
  private readonly prefix: string;
  private readonly heartbeatMs: number;
  private readonly lease: EtcdLease;
  private keySeq = 0;

  private constructor(
    private readonly etcd3: EtcdModule,
    private readonly etcd: Etcd3,
    options: EtcdLockOptions,
  ) {
    const ttlSeconds = options.leaseTtlSeconds ?? 10;
    if (!Number.isInteger(ttlSeconds) || ttlSeconds < 1) {
      throw new RangeError(`leaseTtlSeconds must be a whole number of seconds >= 1, got ${ttlSeconds}`);
    }
    super(newClientId(options.clientId), ttlSeconds * 1000, 'etcd', options.onEvent);
    this.lease = new EtcdLease(etcd, ttlSeconds, (why) => this.loseAll(why));
    this.prefix = options.prefix ?? 'flashsale-lock/';
    this.heartbeatMs = options.heartbeatMs ?? 1000;
  }

  /** Connects to etcd (loading the optional `etcd3` package only now) and grants the client's lease. */
  static async connect(options: EtcdLockOptions = {}): Promise<EtcdLock> {
    const etcd3 = await loadPeer('etcd3', 'etcd', () => import('etcd3'));
    const endpoints = options.endpoints ?? 'http://127.0.0.1:2379';
    const etcd = new etcd3.Etcd3({
      hosts: typeof endpoints === 'string' ? endpoints.split(',') : [...endpoints],
      dialTimeout: 3000,
    });
    const lock = new EtcdLock(etcd3, etcd, options);
    try {
      await lock.lease.current();
    } catch (err) {
      etcd.close();
      throw err;
    }
    return lock;
  }

  /** True while someone holds the lock (or waits for it: a queue has a head whenever it has keys). */
  async isLocked(name: string): Promise<boolean> {
    const prefix = this.queuePrefix(name);
    const res = await this.call(name, () =>
      this.etcd.kv.range({ key: Buffer.from(prefix), range_end: rangeEnd(prefix), count_only: true }),
    );
    return Number(res.count) > 0;
  }

  /** The etcd client's health for /readyz: the cluster answers a read. */
  async ping(): Promise<void> {
    await this.call('ping', () =>
      this.etcd.kv.range({ key: Buffer.from(`${this.prefix}ping`), count_only: true }),
    );
  }

  // --- SessionLock ---

  /** Revokes the lease (every key of this client goes at once) and closes the connection. */
  protected async disconnect(): Promise<void> {
    await this.lease.close();
    this.etcd.close();
  }

  protected async enqueue(request: ObtainRequest, budget: Budget): Promise<Queued<EtcdKey> | null> {
    const { name, signal } = request;
    const prefix = this.queuePrefix(name);
    for (;;) {
      const { id, aliveFrom } = await this.bounded(budget, () => this.call(name, () => this.currentLease()));
      this.keySeq += 1;
      const key = `${prefix}${id}-${this.keySeq}`;
      const sweep = () => this.call(name, () => this.etcd.delete().key(key).exec());
      if (!(request.waitMs > 0)) {
        const revision = await this.creating(
          budget,
          () => this.call(name, () => putIfFree(this.etcd, prefix, key, id, request.owner)),
          sweep,
        );
        return revision === null
          ? null
          : { key: { key, revision }, token: revision, aliveFrom, queued: false };
      }
      const { revision, ahead } = await this.creating(
        budget,
        () => this.call(name, () => putAndReadAhead(this.etcd, prefix, key, id, request.owner)),
        sweep,
      );
      const mine = { key, revision };
      if (!ahead.predecessor) return { key: mine, token: revision, aliveFrom, queued: false };
      let acquired = false;
      try {
        const got = await this.waitTurn(mine, ahead, budget, signal);
        if (got === 'expired') continue;
        acquired = got === 'acquired';
        return acquired
          ? { key: mine, token: revision, aliveFrom: this.lease.confirmedFrom, queued: true }
          : null;
      } finally {
        if (!acquired) await this.withdraw(budget, mine, revision);
      }
    }
  }

  protected async remove(key: EtcdKey, token: number): Promise<boolean> {
    const res = await this.call(key.key, () =>
      this.etcd.kv.txn({
        compare: [{ key: Buffer.from(key.key), target: 'Create', result: 'Equal', create_revision: token }],
        success: [{ request_delete_range: { key: Buffer.from(key.key) } }],
        failure: [],
      }),
    );
    return res.succeeded;
  }

  protected async confirm(keys: EtcdKey[]): Promise<{ sentAt: number; held: boolean[] }> {
    const sentAt = performance.now();
    const lease = this.lease.live();
    if (!lease) return { sentAt, held: keys.map(() => false) };
    const [, res] = await Promise.all([
      lease.keepaliveOnce(),
      this.etcd.kv.txn({
        compare: [],
        success: keys.map((k) => ({ request_range: { key: Buffer.from(k.key), keys_only: true } })),
        failure: [],
      }),
    ]);
    this.lease.confirmed(sentAt);
    const held = keys.map((k, i) => {
      const kv = res.responses[i]?.response_range.kvs[0];
      return kv !== undefined && Number(kv.create_revision) === k.revision;
    });
    return { sentAt, held };
  }

  // --- internals ---

  private queuePrefix(name: string): string {
    return `${this.prefix}${name}/`;
  }

  /** The client's lease (EtcdLease); refused once the client is closed. */
  private currentLease(): Promise<{ id: string; aliveFrom: number }> {
    if (this.closed) throw new LockUnavailableError('etcd', new Error('lock client closed'), 'etcd');
    return this.lease.current();
  }

  /**
   * Waits until our key is the oldest: watch the predecessor's delete (one watch per predecessor,
   * kept across heartbeats: etcd3 creates a client's watchers one at a time, so re-creating them
   * would queue every waiter of a process behind each other); when the predecessor was the head its
   * delete makes us the holder, otherwise read the queue again. 'expired': our key is gone.
   */
  private async waitTurn(
    mine: EtcdKey,
    first: Ahead,
    budget: Budget,
    signal: AbortSignal | undefined,
  ): Promise<'acquired' | 'timeout' | 'expired'> {
    let ahead = first;
    let watch: PredecessorWatch | undefined;
    try {
      for (;;) {
        if (!ahead.mine) return 'expired';
        if (!ahead.predecessor) return 'acquired';
        const left = budget.deadline - performance.now();
        if (left <= 0) return 'timeout';
        if (watch?.key !== ahead.predecessor) {
          if (watch) unwatch(watch);
          watch = watchDelete(this.etcd, ahead.predecessor, ahead.revision + 1);
        }
        await nextEvent(watch, Math.min(left, this.heartbeatMs), signal);
        if (watch.deleted && ahead.predecessorIsHead) return 'acquired';
        try {
          ahead = await this.bounded(budget, () => readAhead(this.etcd, this.queuePrefix(budget.name), mine));
        } catch {
          // etcd unreachable for now: our key lives on with the lease; ask again after the heartbeat.
          if (performance.now() >= budget.deadline) return 'timeout';
        }
      }
    } finally {
      if (watch) unwatch(watch);
    }
  }

  /** An etcd error or a gRPC failure, or a lease etcd no longer has: etcd could not answer. */
  protected override isUnavailable(err: unknown): boolean {
    return (
      err instanceof this.etcd3.EtcdError ||
      err instanceof this.etcd3.EtcdLeaseInvalidError ||
      isGrpcError(err)
    );
  }

  /**
   * As the core's call, and a lease the server no longer has (expired while this client was cut off,
   * before its keep-alive noticed) is dropped with its holds, so the next call grants a new one.
   */
  protected override async call<T>(name: string, op: () => Promise<T>): Promise<T> {
    try {
      return await op();
    } catch (err) {
      if (err instanceof this.etcd3.EtcdLeaseInvalidError) this.lease.drop();
      if (this.isUnavailable(err)) throw new LockUnavailableError(name, err, 'etcd');
      throw err;
    }
  }
}

function isGrpcError(err: unknown): boolean {
  return err instanceof Error && typeof (err as { code?: unknown }).code === 'number';
}
