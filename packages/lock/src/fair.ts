// Fair lock: strict FIFO in the order waiters first asked, on the reentrant lock's Redis layout, with
// per-waiter deadlines from the server's clock and one woken waiter per release.

import {
  fairAcquireInput,
  fairAcquireScript,
  fairReleaseInput,
  fairReleaseScript,
  type QueuedAcquire,
  type QueuedRelease,
} from './family-scripts.ts';
import type { LockHandle } from './handle.ts';
import { fairKeys } from './keys.ts';
import { QueuedLock } from './queued.ts';
import { isCluster } from './redis-client.ts';
import { ownerTtl, type QueuedReply, ReleaseCode } from './replies.ts';
import { type LockPipeline, renewInput, renewScript } from './scripts.ts';

/**
 * Fair locks over a LockClient: strict FIFO by first ask. A waiter keeps its ticket while it keeps
 * asking (every `heartbeatMs`, default 5 s); nobody takes a free lock while a live waiter holds an
 * earlier ticket, tryAcquire included. Each waiter's deadline is its own wait, from the server's clock,
 * so a waiter that dies is dropped at its deadline without moving anyone else's; a grant to a waiter
 * that died lasts at most its deadline plus 100 ms. Only the head's timer follows the holder's lease.
 *
 * @example
 * const fair = new FairLock(locks);
 * await fair.withLock('report', { waitMs: 10_000 }, async () => { ... });
 */
export class FairLock extends QueuedLock {
  protected readonly holdKind = 'lock';

  /** Deletes the lock whoever holds it; the oldest live waiter gets it next. */
  async forceUnlock(name: string): Promise<boolean> {
    const requestId = this.core.nextRequestId();
    const reply = await this.core.call(name, () =>
      this.releaseOnce({ name, owner: '', leaseMs: 0, mode: 'force', requestId }),
    );
    return reply === ReleaseCode.Released;
  }

  async isLocked(name: string): Promise<boolean> {
    return (await this.core.call(name, () => this.redis.exists(name))) === 1;
  }

  /** Waiters currently queued (dead ones included until the next operation on the lock drops them). */
  async queueLength(name: string): Promise<number> {
    return this.core.call(name, () => this.redis.zcard(fairKeys(name).queue));
  }

  protected acquireOnce(request: QueuedAcquire): Promise<QueuedReply> {
    return fairAcquireScript.run(this.redis, fairAcquireInput(request));
  }

  protected releaseOnce(request: QueuedRelease): Promise<ReleaseCode | null> {
    return fairReleaseScript.run(
      this.redis,
      fairReleaseInput({ ...request, sharded: isCluster(this.redis) }),
    );
  }

  protected renewOnce(name: string, owner: string, leaseMs: number): Promise<boolean> {
    return renewScript.run(this.redis, renewInput(name, owner, leaseMs));
  }

  queueRenewal(pipeline: LockPipeline, handle: LockHandle, leaseMs: number): void {
    renewScript.run(pipeline, renewInput(handle.name, handle.owner, leaseMs));
  }

  async remainingTtl(handle: LockHandle): Promise<number> {
    const replies = await this.core.call(handle.name, () =>
      this.redis.pipeline().hexists(handle.name, handle.owner).pttl(handle.name).exec(),
    );
    return ownerTtl(replies);
  }
}
