// Lease renewal for holds without an explicit lease: one timer per client renews every held lock in one
// batch every lease/3 (a pipeline on one connection, or a quorum over several masters).
import { performance } from 'node:perf_hooks';
import type { LockHandle } from './handle.ts';
import { type RedisClient, runBatch } from './redis-client.ts';

/**
 * Per handle: renewed (the hold is confirmed for the lease counted from `from`, monotonic ms), lost
 * (the lock is no longer held), or unreachable (unknown; lost once the known lease has run out).
 */
export type RenewOutcome = { from: number } | 'lost' | 'unreachable';
export type BatchRenewer = (handles: LockHandle[], leaseMs: number) => Promise<RenewOutcome[]>;

/**
 * Renews every handle in one pipelined round trip (one per master on a cluster); each handle queues
 * its own kind's renew script.
 */
function pipelineRenewer(redis: RedisClient): BatchRenewer {
  return async (handles, leaseMs) => {
    const sentAt = performance.now();
    const replies = await runBatch(
      redis,
      handles.map((h) => ({ key: h.name, queue: (pipeline) => h.queueRenewal(pipeline, leaseMs) })),
    );
    return handles.map((_, i) => {
      const [err, reply] = replies[i] ?? [new Error('no reply'), null];
      if (err) return 'unreachable';
      return Number(reply) === 1 ? { from: sentAt } : 'lost';
    });
  };
}

export class Watchdog {
  private readonly held = new Map<string, Set<LockHandle>>();
  private timer: NodeJS.Timeout | undefined;
  private inFlight = false;
  private readonly renew: BatchRenewer;

  constructor(
    renew: RedisClient | BatchRenewer,
    readonly leaseMs: number,
  ) {
    this.renew = typeof renew === 'function' ? renew : pipelineRenewer(renew);
  }

  add(handle: LockHandle): void {
    const key = entryKey(handle);
    let set = this.held.get(key);
    if (!set) {
      set = new Set();
      this.held.set(key, set);
    }
    set.add(handle);
    if (!this.timer) {
      this.timer = setInterval(() => void this.renewAll(), Math.max(1, Math.floor(this.leaseMs / 3)));
      this.timer.unref();
    }
  }

  remove(handle: LockHandle): void {
    const key = entryKey(handle);
    const set = this.held.get(key);
    if (!set?.delete(handle)) return;
    if (set.size === 0) this.held.delete(key);
    if (this.held.size === 0) this.stop();
  }

  stop(): void {
    clearInterval(this.timer);
    this.timer = undefined;
  }

  /** Never throws: failures become lost handles once their lease is past. */
  async renewAll(): Promise<void> {
    if (this.inFlight || this.held.size === 0) return;
    this.inFlight = true;
    const batch = [...this.held.values()].map((set) => [...set]);
    try {
      const outcomes = await this.renew(
        batch.map((handles) => handles[0] as LockHandle),
        this.leaseMs,
      );
      batch.forEach((handles, i) => {
        const outcome = outcomes[i] ?? 'unreachable';
        for (const h of handles) {
          if (!this.isRegistered(h)) continue;
          if (outcome === 'unreachable')
            this.loseIfExpired(h, 'renewal could not reach the lock service before the lease lapsed');
          else if (outcome === 'lost') this.lose(h, 'lock no longer held at renewal');
          else h.confirm(outcome.from, this.leaseMs);
        }
      });
    } catch {
      for (const handles of batch) {
        for (const h of handles) {
          if (this.isRegistered(h))
            this.loseIfExpired(h, 'renewal could not reach the lock service before the lease lapsed');
        }
      }
    } finally {
      this.inFlight = false;
    }
  }

  private isRegistered(h: LockHandle): boolean {
    return this.held.get(entryKey(h))?.has(h) === true;
  }

  private loseIfExpired(h: LockHandle, reason: string): void {
    if (h.expiredAt(performance.now())) this.lose(h, reason);
  }

  private lose(h: LockHandle, reason: string): void {
    this.remove(h);
    h.markLost(reason);
  }
}

/** Handles renewed by one command: same kind of hold, same lock, same owner. */
function entryKey(h: LockHandle): string {
  return `${h.kind}\u0000${h.name}\u0000${h.owner}`;
}
