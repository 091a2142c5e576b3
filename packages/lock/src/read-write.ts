// Read-write lock on the queued-lock foundations: readers share, a writer excludes readers and writers
// of other owners, both re-enter; downgrade allowed, upgrade refused, no writer starvation.

import type { LockClient } from './client.ts';
import type { LockCore } from './core.ts';
import {
  type QueuedAcquire,
  type QueuedRelease,
  type RwKind,
  rwAcquireInput,
  rwAcquireScript,
  rwReleaseInput,
  rwReleaseScript,
  rwRenewInput,
  rwRenewScript,
} from './family-scripts.ts';
import type { LockHandle } from './handle.ts';
import { rwKeys } from './keys.ts';
import { currentOwner } from './owner.ts';
import { QueuedLock, type QueuedLockOptions } from './queued.ts';
import { isCluster, type RedisClient } from './redis-client.ts';
import { type QueuedReply, ReleaseCode } from './replies.ts';
import type { LockPipeline } from './scripts.ts';

/** One side of a read-write lock (`rw.read` or `rw.write`), with the queued locks' acquire forms. */
export class ReadWriteSide extends QueuedLock {
  protected readonly holdKind: 'read' | 'write';

  constructor(
    client: LockClient,
    private readonly kind: RwKind,
    options: QueuedLockOptions = {},
  ) {
    super(client, options);
    this.holdKind = kind === 'r' ? 'read' : 'write';
  }

  /** This owner's re-entry count of this side (default: the current chain's owner); 0 if not held. */
  async holdCount(name: string, owner = currentOwner(this.core.clientId)): Promise<number> {
    if (!owner) return 0;
    const v = await this.core.call(name, () => this.redis.hget(name, `${this.kind}:${owner}`));
    return v === null ? 0 : Number(v);
  }

  protected acquireOnce(request: QueuedAcquire): Promise<QueuedReply> {
    return rwAcquireScript.run(this.redis, rwAcquireInput({ ...request, kind: this.kind }));
  }

  protected releaseOnce(request: QueuedRelease): Promise<ReleaseCode | null> {
    return rwReleaseScript.run(
      this.redis,
      rwReleaseInput({ ...request, kind: this.kind, sharded: isCluster(this.redis) }),
    );
  }

  protected renewOnce(name: string, owner: string, leaseMs: number): Promise<boolean> {
    return rwRenewScript.run(this.redis, rwRenewInput(name, owner, this.kind, leaseMs));
  }

  queueRenewal(pipeline: LockPipeline, handle: LockHandle, leaseMs: number): void {
    rwRenewScript.run(pipeline, rwRenewInput(handle.name, handle.owner, this.kind, leaseMs));
  }

  async remainingTtl(handle: LockHandle): Promise<number> {
    const replies = await this.core.call(handle.name, () =>
      this.redis.pipeline().zscore(rwKeys(handle.name).holds, `${this.kind}:${handle.owner}`).time().exec(),
    );
    const [[, lapse], [, time]] = (replies ?? []) as [[unknown, string | null], [unknown, [string, string]]];
    if (lapse === null || !time) return 0;
    const now = Number(time[0]) * 1000 + Math.floor(Number(time[1]) / 1000);
    return Math.max(0, Number(lapse) - now);
  }
}

/**
 * Read-write locks over a LockClient. Readers share; a writer excludes readers and writers of other
 * owners; both re-enter. The write holder may take the read lock at once and then release the write
 * lock (downgrade); a read holder asking for the write lock gets LockUpgradeError at once (two upgrading
 * readers would wait for each other forever). Each hold has its own lease, so a dead reader stops
 * blocking writers when its own lease lapses. One FIFO queue for readers and writers: a reader that
 * finds a writer queued waits behind it, so writers are never starved.
 *
 * @example
 * const rw = new ReadWriteLock(locks);
 * await rw.read.withLock('catalog', { waitMs: 1000 }, async () => readCatalog());
 * await rw.write.withLock('catalog', { waitMs: 5000 }, async () => rebuildCatalog());
 */
export class ReadWriteLock {
  readonly read: ReadWriteSide;
  readonly write: ReadWriteSide;
  private readonly core: LockCore;
  private readonly redis: RedisClient;

  constructor(client: LockClient, options: QueuedLockOptions = {}) {
    this.read = new ReadWriteSide(client, 'r', options);
    this.write = new ReadWriteSide(client, 'w', options);
    this.core = client.core;
    this.redis = this.core.redis;
  }

  /** 'read' or 'write' while held (a downgrading writer shows 'write' until it releases the write lock). */
  async mode(name: string): Promise<'read' | 'write' | null> {
    const mode = await this.core.call(name, () => this.redis.hget(name, 'mode'));
    return mode === 'read' || mode === 'write' ? mode : null;
  }

  /** Ends every hold whoever holds it; queued waiters get the lock in order. */
  async forceUnlock(name: string): Promise<boolean> {
    const requestId = this.core.nextRequestId();
    const reply = await this.core.call(name, () =>
      rwReleaseScript.run(
        this.redis,
        rwReleaseInput({
          name,
          owner: '',
          kind: 'w',
          mode: 'force',
          requestId,
          sharded: isCluster(this.redis),
        }),
      ),
    );
    return reply === ReleaseCode.Released;
  }
}
