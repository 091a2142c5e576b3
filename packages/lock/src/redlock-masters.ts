// The masters of a RedLock: one operation on every master in parallel, each answer bounded in time,
// decided by a majority; the release script everywhere; wake-ups from every master's subscriber.
import { performance } from 'node:perf_hooks';
import type { Redis } from 'ioredis';
import {
  FAMILY_SCRIPTS,
  type RedlockReleaseMode,
  redlockReleaseInput,
  redlockReleaseScript,
} from './family-scripts.ts';
import { defineScripts } from './lua.ts';
import { newRequestId } from './owner.ts';
import { type ReleaseCode, RenewCode } from './replies.ts';
import { LOCK_SCRIPTS, renewInput, renewScript } from './scripts.ts';
import { type WaitSource, withDeadline } from './waiting.ts';
import { type WaitEvent, type Waiter, WakeHub } from './wake-hub.ts';
import type { BatchRenewer, RenewOutcome } from './watchdog.ts';

/** The error of a master that did not answer within the round's time. */
const SILENT = 'master did not answer in time';

export interface Master {
  index: number;
  redis: Redis;
  hub: WakeHub;
}

export type Answer<R> = { ok: true; value: R } | { ok: false; error: unknown };

export interface Poll<R> {
  answers: Array<Answer<R> | undefined>;
  yes: number;
}

/** The timing options of RedLock the masters use. */
export interface MasterTimings {
  masterTimeoutMs?: number;
  reservationMs?: number;
}

/** N independent Redis masters deciding by majority (⌊N/2⌋ + 1). */
export class RedlockMasters {
  readonly list: Master[];
  /** Masters that must agree: ⌊N/2⌋ + 1. */
  readonly quorum: number;

  constructor(
    masters: Redis[],
    private readonly clientId: string,
    private readonly timings: MasterTimings,
  ) {
    if (masters.length === 0) throw new RangeError('RedLock needs at least one master');
    this.quorum = Math.floor(masters.length / 2) + 1;
    this.list = masters.map((redis, index) => {
      defineScripts(redis, [...LOCK_SCRIPTS, ...FAMILY_SCRIPTS]);
      return { index, redis, hub: new WakeHub(redis, clientId) };
    });
  }

  get size(): number {
    return this.list.length;
  }

  /** Longest wait for one master's answer (default: 1 % of the lease, between 50 ms and 1 s). */
  timeout(leaseMs: number): number {
    return this.timings.masterTimeoutMs ?? Math.min(1000, Math.max(50, Math.floor(leaseMs / 100)));
  }

  /**
   * Runs op on every master in parallel, each bounded by the master timeout. With early: settles as
   * soon as a majority said yes or a majority can no longer say yes; otherwise once all answered.
   */
  poll<R>(
    op: (m: Master) => Promise<R>,
    isYes: (r: R) => boolean,
    early: boolean,
    leaseMs: number,
  ): Promise<Poll<R>> {
    const n = this.list.length;
    const timeoutMs = this.timeout(leaseMs);
    return new Promise((resolve) => {
      const answers: Array<Answer<R> | undefined> = new Array(n).fill(undefined);
      let yes = 0;
      let no = 0;
      let settled = false;
      const finish = () => {
        if (settled) return;
        settled = true;
        resolve({ answers: [...answers], yes });
      };
      for (const m of this.list) {
        withDeadline(op(m), timeoutMs, SILENT)
          .then(
            (value) => {
              answers[m.index] = { ok: true, value };
              if (isYes(value)) yes += 1;
              else no += 1;
            },
            (error: unknown) => {
              answers[m.index] = { ok: false, error };
              no += 1;
            },
          )
          .finally(() => {
            if (yes + no === n || (early && (yes >= this.quorum || no > n - this.quorum))) finish();
          });
      }
    });
  }

  /**
   * Runs the release script in mode on every master; resolves once the masters for which wait(i) is
   * true have answered (or timed out). Never throws.
   */
  async release(
    request: { name: string; owner: string; leaseMs: number; mode: RedlockReleaseMode },
    wait: (index: number) => boolean,
  ): Promise<Array<Answer<ReleaseCode | null> | undefined>> {
    const timeoutMs = this.timeout(request.leaseMs);
    const reservationMs = this.timings.reservationMs ?? 2 * timeoutMs;
    const answers: Array<Answer<ReleaseCode | null> | undefined> = new Array(this.list.length).fill(
      undefined,
    );
    await Promise.all(
      this.list.map((m) => {
        const requestId = newRequestId(this.clientId);
        const input = redlockReleaseInput({ ...request, requestId, reservationMs });
        const done = withDeadline(redlockReleaseScript.run(m.redis, input), timeoutMs, SILENT).then(
          (value) => {
            answers[m.index] = { ok: true, value };
          },
          (error: unknown) => {
            answers[m.index] = { ok: false, error };
          },
        );
        return wait(m.index) ? done : undefined;
      }),
    );
    return answers;
  }

  /** Wake-ups from every master: each master's hub (its subscriber) on this instance's wake channel. */
  async listen(name: string, owner: string, leaseMs: number, deadline: number): Promise<WaitSource> {
    const timeoutMs = Math.min(this.timeout(leaseMs), deadline - performance.now());
    // A master that cannot be reached now is not waited for: its wake-ups simply do not come, and the
    // waiter's own timer covers it (ioredis re-subscribes when it comes back).
    await Promise.all(this.list.map((m) => withDeadline(m.hub.start(), timeoutMs).catch(() => {})));
    const waiters: Waiter[] = this.list.map((m) => m.hub.register(name, owner));
    return {
      next: async (ms: number, signal?: AbortSignal): Promise<WaitEvent> => {
        const local = new AbortController();
        const combined = signal ? AbortSignal.any([signal, local.signal]) : local.signal;
        try {
          return await Promise.race(waiters.map((w) => w.next(ms, combined)));
        } finally {
          local.abort(new Error('another master answered first'));
        }
      },
      close: () => {
        this.list.forEach((m, i) => {
          const w = waiters[i];
          if (w) m.hub.unregister(w);
        });
      },
    };
  }

  /**
   * The watchdog's renewal: every held lock on every master in one pipeline each; kept with a
   * majority that answered within lease − drift.
   */
  batchRenewer(drift: (leaseMs: number) => number): BatchRenewer {
    return async (handles, leaseMs) => {
      const start = performance.now();
      const timeoutMs = this.timeout(leaseMs);
      const perMaster = await Promise.all(
        this.list.map(async (m) => {
          const pipeline = m.redis.pipeline();
          for (const h of handles) renewScript.run(pipeline, renewInput(h.name, h.owner, leaseMs));
          try {
            return (await withDeadline(pipeline.exec(), timeoutMs, SILENT)) ?? [];
          } catch {
            return undefined;
          }
        }),
      );
      const skew = drift(leaseMs);
      const inTime = performance.now() - start < leaseMs - skew;
      return handles.map((_, i): RenewOutcome => {
        let yes = 0;
        let lost = 0;
        for (const replies of perMaster) {
          const [err, reply] = replies?.[i] ?? [new Error('no reply'), null];
          if (err) continue;
          if (Number(reply) === RenewCode.Renewed) yes += 1;
          else lost += 1;
        }
        if (yes >= this.quorum && inTime) return { from: start - skew };
        return lost > this.list.length - this.quorum ? 'lost' : 'unreachable';
      });
    };
  }

  async close(): Promise<void> {
    await Promise.all(this.list.map((m) => m.hub.close()));
  }
}
