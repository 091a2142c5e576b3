// The order in which Redis nodes committed reservations, seen with MONITOR from the test's side of
// every partition: each reservation is one HSET into a shard's `:res` hash, run by reserve.lua, so its
// MONITOR line gives the shard, the order id and the fencing token (in the entry), in the node's order.
import { Redis } from 'ioredis';

export interface Commit {
  /** `host:port` of the node that ran it. */
  node: string;
  /** The node's clock (MONITOR's timestamp), seconds. */
  time: number;
  /** Arrival order at the test over all nodes (ties of `time` across nodes). */
  seq: number;
  shardKey: string;
  orderId: string;
  token: number;
}

/** `stock:{P:g:i}:res` → `stock:{P:g:i}`. */
const RES_KEY = /^(stock:\{[^}]+\}):res$/;

export class CommitLog {
  private readonly monitors: Redis[] = [];
  private readonly commits: Commit[] = [];
  private seq = 0;
  /** Nodes whose MONITOR connection broke: the log may miss commits of theirs. */
  readonly broken = new Set<string>();

  private constructor() {}

  /** Starts MONITOR on each node (`host:port`); resolves once every monitor is on. */
  static async watch(nodes: { host: string; port: number }[]): Promise<CommitLog> {
    const log = new CommitLog();
    await Promise.all(nodes.map((n) => log.add(n.host, n.port)));
    return log;
  }

  private async add(host: string, port: number): Promise<void> {
    const node = `${host}:${port}`;
    // A connection that closes before MONITOR is answered is tried again (seen once in CI, on a node
    // of a cluster still settling); a node that will not take it fails the scenario, not the runner.
    let monitor: Redis | undefined;
    for (let attempt = 1; !monitor; attempt++) {
      monitor = await startMonitor(host, port).catch((err: unknown) => {
        if (attempt >= 3) throw err;
        return undefined;
      });
    }
    monitor.on('close', () => this.broken.add(node));
    monitor.on('monitor', (time: string, args: string[]) => this.record(node, Number(time), args));
    this.monitors.push(monitor);
  }

  private record(node: string, time: number, args: string[]): void {
    const [command, key, orderId, entry] = args;
    if (command?.toLowerCase() !== 'hset' || !key || !orderId || !entry) return;
    const shard = RES_KEY.exec(key);
    if (!shard) return;
    const token = Number((JSON.parse(entry) as { token?: unknown }).token);
    this.commits.push({ node, time, seq: this.seq++, shardKey: shard[1] as string, orderId, token });
  }

  /**
   * Each order's first commit (a replica's copy of it, or a replay, comes later), in commit order:
   * by the nodes' clock across nodes (one machine's clock), by arrival within one node.
   */
  firstCommits(): Commit[] {
    const seen = new Set<string>();
    const sorted = [...this.commits].sort((a, b) =>
      a.node === b.node ? a.seq - b.seq : a.time - b.time || a.seq - b.seq,
    );
    return sorted.filter((c) => {
      if (seen.has(c.orderId)) return false;
      seen.add(c.orderId);
      return true;
    });
  }

  /** Order ids `node` committed at or after `since` (its clock, epoch ms). */
  committedOn(node: string, since: number): string[] {
    return this.commits.filter((c) => c.node === node && c.time * 1000 >= since).map((c) => c.orderId);
  }

  async stop(): Promise<void> {
    for (const m of this.monitors.splice(0)) m.disconnect();
  }
}

/**
 * A MONITOR connection to one node. Made here rather than by client.monitor(): that one listens for a
 * single 'error' until MONITOR is answered, and a connection closing then emits a second one with no
 * listener, which killed the runner (seen in CI). No ready check either: its INFO still waiting when
 * the first MONITOR lines arrive breaks ioredis' reply queue ("Command queue state error").
 */
async function startMonitor(host: string, port: number): Promise<Redis> {
  const monitor = new Redis(port, host, {
    monitor: true,
    enableReadyCheck: false,
    maxRetriesPerRequest: 1,
    retryStrategy: () => null,
  });
  monitor.on('error', () => {});
  await new Promise<void>((resolve, reject) => {
    monitor.once('monitoring', () => resolve());
    monitor.once('end', () => reject(new Error(`MONITOR on ${host}:${port} did not start`)));
  });
  return monitor;
}
