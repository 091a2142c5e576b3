// API_WORKERS > 1: the HTTP API as N node:cluster workers sharing PORT, supervised by the primary,
// which replaces a worker that dies (kill -9 included) and stops them all on a graceful shutdown.
import cluster, { type Worker } from 'node:cluster';
import { once } from 'node:events';
import type { Logger } from './log.ts';

/** A worker that dies sooner than this after its start is replaced only after RESPAWN_DELAY_MS. */
const MIN_LIFETIME_MS = 5_000;
const RESPAWN_DELAY_MS = 1_000;

/**
 * The primary's side of the API cluster. Workers are forks of the same entry point (cluster.isPrimary
 * is false there, so they start only the API); the primary accepts connections and hands them out
 * round-robin. A worker that dies while the cluster is running is forked again, at once unless it
 * keeps dying at start (then after a pause, so a broken config does not spin).
 */
export class ApiCluster {
  private stopping = false;
  private readonly started = new Map<Worker, number>();

  constructor(
    private readonly size: number,
    private readonly logger: Logger,
  ) {}

  /** Forks the workers; resolves once each is listening. */
  async start(): Promise<void> {
    cluster.on('exit', (worker, code, signal) => {
      const startedAt = this.started.get(worker) ?? 0;
      this.started.delete(worker);
      if (this.stopping) return;
      this.logger.error({ workerPid: worker.process.pid, code, signal }, 'api worker died; starting another');
      const delay = Date.now() - startedAt < MIN_LIFETIME_MS ? RESPAWN_DELAY_MS : 0;
      setTimeout(() => {
        if (!this.stopping) void this.fork().catch(() => {});
      }, delay);
    });
    await Promise.all(Array.from({ length: this.size }, () => this.fork()));
    this.logger.info({ workers: this.size }, 'api cluster listening');
  }

  private async fork(): Promise<Worker> {
    const worker = cluster.fork();
    this.started.set(worker, Date.now());
    await Promise.race([
      once(worker, 'listening'),
      once(worker, 'exit').then(() => {
        throw new Error('api worker exited before listening');
      }),
    ]);
    this.logger.info({ workerPid: worker.process.pid }, 'api worker listening');
    return worker;
  }

  /** SIGTERM to every worker (each finishes its in-flight requests) and waits for all to exit. */
  async stop(): Promise<void> {
    this.stopping = true;
    const workers = Object.values(cluster.workers ?? {}).filter((w): w is Worker => w !== undefined);
    await Promise.all(
      workers.map(async (w) => {
        if (w.isDead()) return;
        const exited = once(w, 'exit');
        w.process.kill('SIGTERM');
        await exited;
      }),
    );
  }
}
