// Fair lock: strict FIFO in the order waiters first asked, like ZooKeeper's sequential nodes or etcd's
// revisions (seed 001 §2–3), on the reentrant lock's Redis layout.
//
// - Order: each waiter gets a ticket on its first ask and keeps it while it keeps asking; nobody takes
//   a free lock while a live waiter holds an earlier ticket — no barging, tryAcquire included.
// - No herd: a release grants the lock to the oldest live waiter and tells only that waiter's client,
//   on the client's own channel. Waiters behind the head sleep until their heartbeat; only the head's
//   timer tracks the holder's lease (with a hint when a grant could lapse sooner than its timer).
// - Deadlines come from the server's TIME. Each waiter's deadline is its own wait (capped, renewed by
//   every ask): a waiter that dies is dropped at its deadline without moving anyone else's (Redisson's
//   fair lock adds each waiter's timeout onto the previous one's). A grant made to a waiter that died
//   while queued lasts no longer than its deadline plus a 100 ms grace, so a dead waiter in the middle
//   of the queue delays the next one by at most that.
import {
  fairAcquireInput,
  fairAcquireScript,
  fairReleaseInput,
  fairReleaseScript,
  type QueuedAcquire,
  type QueuedRelease,
  type QueuedReply,
} from './family-scripts.ts';
import type { LockHandle } from './handle.ts';
import { fairKeys } from './keys.ts';
import { QueuedLock } from './queued.ts';
import { type LockPipeline, renewInput, renewScript } from './scripts.ts';

/** Fair locks over a LockClient: `new FairLock(client).acquire(name, options)`. */
export class FairLock extends QueuedLock {
  protected readonly holdKind = 'lock';

  /** Deletes the lock whoever holds it; the oldest live waiter gets it next. */
  async forceUnlock(name: string): Promise<boolean> {
    const requestId = this.core.nextRequestId();
    const reply = await this.core.call(name, () =>
      this.releaseOnce({ name, owner: '', leaseMs: 0, mode: 'force', requestId }),
    );
    return reply === 1;
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

  protected releaseOnce(request: QueuedRelease): Promise<0 | 1 | null> {
    return fairReleaseScript.run(this.redis, fairReleaseInput(request));
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
    const [held, pttl] = (replies ?? []).map(([, v]) => Number(v));
    return held === 1 && pttl !== undefined && pttl > 0 ? pttl : 0;
  }
}
