// Which Redis masters have fewer live replicas than REDIS_WAIT_REPLICAS, so orders can go elsewhere:
// each master's INFO replication read once a second, and a failed WAIT marking its master at once.
import { performance } from 'node:perf_hooks';
import { masterClients, type RedisClient } from './connection.ts';

/** A replica whose last acknowledgement is older than this (INFO `lag`, seconds) does not count. */
const MAX_LAG_SECONDS = 2;

interface MasterState {
  /** The last probe found enough online replicas. */
  probeOk: boolean;
  /** When (performance.now()) a WAIT failed, if no probe begun after it has found enough replicas since; 0: none. */
  waitFailedAt: number;
}

/** Online replicas with a recent acknowledgement, from an INFO replication text. */
export function liveReplicas(info: string): number {
  let live = 0;
  for (const m of info.matchAll(/^slave\d+:(.*)$/gm)) {
    const fields = Object.fromEntries((m[1] ?? '').split(',').map((kv) => kv.split('=') as [string, string]));
    if (fields.state === 'online' && Number(fields.lag ?? 0) <= MAX_LAG_SECONDS) live += 1;
  }
  return live;
}

/**
 * Per master (by `host:port`, as masterOf names them): short of replicas or not. A master is short
 * when its last probe found fewer than `required` online replicas with a recent acknowledgement, or
 * when a WAIT on it failed and no probe begun after the failure has found them since. Masters never
 * seen are not short. The probe costs one INFO per master per interval, nothing per order.
 *
 * @example
 * const health = new ReplicaHealth(redis, 1, { onChange: (short) => log(short) });
 * if (health.isShort(masterOf(redis, key))) skipThatShard();
 */
export class ReplicaHealth {
  private readonly masters = new Map<string, MasterState>();
  private timer: NodeJS.Timeout | undefined;
  private probing = false;

  constructor(
    private readonly redis: RedisClient,
    private readonly required: number,
    private readonly options: { intervalMs?: number; onChange?: (short: string[]) => void } = {},
  ) {
    this.timer = setInterval(() => void this.probe(), options.intervalMs ?? 1000);
    this.timer.unref();
    void this.probe();
  }

  /** True when the master at `address` has fewer live replicas than required. */
  isShort(address: string): boolean {
    const state = this.masters.get(address);
    return state !== undefined && (!state.probeOk || state.waitFailedAt > 0);
  }

  /** The masters short of replicas now. */
  shortMasters(): string[] {
    return [...this.masters.keys()].filter((a) => this.isShort(a)).sort();
  }

  /** A WAIT round on the master at `address` ended: confirmed (ok) or not. */
  observeWait(address: string, ok: boolean): void {
    const state = this.state(address);
    this.update(() => {
      state.waitFailedAt = ok ? 0 : performance.now();
      if (ok) state.probeOk = true;
    });
  }

  /** Reads every master's INFO replication once (also called by the timer). */
  async probe(): Promise<void> {
    if (this.probing) return;
    this.probing = true;
    try {
      const nodes = masterClients(this.redis);
      const seen = new Set<string>();
      await Promise.all(
        nodes.map(async (node) => {
          const address = `${node.options.host}:${node.options.port}`;
          seen.add(address);
          const state = this.state(address);
          const startedAt = performance.now();
          const ok = await node.info('replication').then(
            (info) => liveReplicas(info) >= this.required,
            () => false,
          );
          this.update(() => {
            state.probeOk = ok;
            // A WAIT failure before this read began is cleared by it; one during it is not.
            if (ok && state.waitFailedAt < startedAt) state.waitFailedAt = 0;
          });
        }),
      );
      // A node that is no longer a master (failed over, or gone) is forgotten.
      for (const address of this.masters.keys()) {
        if (!seen.has(address)) this.update(() => this.masters.delete(address));
      }
    } finally {
      this.probing = false;
    }
  }

  close(): void {
    clearInterval(this.timer);
    this.timer = undefined;
  }

  private state(address: string): MasterState {
    let state = this.masters.get(address);
    if (!state) {
      state = { probeOk: true, waitFailedAt: 0 };
      this.masters.set(address, state);
    }
    return state;
  }

  /** Runs a change and reports the short masters when the set changed. */
  private update(change: () => void): void {
    const before = this.shortMasters().join(',');
    change();
    const after = this.shortMasters();
    if (after.join(',') !== before) this.options.onChange?.(after);
  }
}
