// Lease renewal for holds without an explicit lease. One timer per client renews every held lock in
// one pipelined round trip every lease/3. A handle released while a renewal is in flight is ignored
// when the reply lands (no Redisson #7272 race): replies only touch handles that were sent and are
// still registered.
import { performance } from 'node:perf_hooks';
import type { LockHandle } from './handle.ts';
import type { LockPipeline, LockRedis } from './scripts.ts';

export class Watchdog {
  private readonly held = new Map<string, Set<LockHandle>>();
  private timer: NodeJS.Timeout | undefined;
  private inFlight = false;

  constructor(
    private readonly redis: LockRedis,
    readonly leaseMs: number,
  ) {}

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
    const sentAt = performance.now();
    try {
      const pipeline = this.redis.pipeline() as LockPipeline;
      for (const handles of batch) {
        const first = handles[0];
        if (first) pipeline.flashsaleLockRenew(first.name, this.leaseMs, first.owner);
      }
      const replies = (await pipeline.exec()) ?? [];
      batch.forEach((handles, i) => {
        const [err, reply] = replies[i] ?? [new Error('no reply'), null];
        for (const h of handles) {
          if (!this.isRegistered(h)) continue;
          if (err) this.loseIfExpired(h, 'renewal could not reach Redis before the lease lapsed');
          else if (Number(reply) === 1) h.confirm(sentAt, this.leaseMs);
          else this.lose(h, 'lock no longer held at renewal');
        }
      });
    } catch {
      for (const handles of batch) {
        for (const h of handles) {
          if (this.isRegistered(h))
            this.loseIfExpired(h, 'renewal could not reach Redis before the lease lapsed');
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

function entryKey(h: LockHandle): string {
  return `${h.name}\u0000${h.owner}`;
}
