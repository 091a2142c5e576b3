// The code trees a benchmark runs side by side in one session: this checkout, and for
// `npm run bench:compare` another commit's worktree. Each side's API is that tree's bench entry
// (bench/order/bench-api.ts), spawned on the one shared Redis and Postgres.
import { join } from 'node:path';
import { type Infra, type Spawned, spawnService } from '../../harness/service.ts';

export interface Side {
  /** Short label in tables: `this`, or the other commit's short hash. */
  name: string;
  /** Repository root of the tree whose code runs. */
  root: string;
  /** Settings of this side's API processes only (e.g. a database of its own for its migrations). */
  env?: Record<string, string>;
}

/** Spawns, stops and keeps the count of the processes of the sides. */
export class SideProcesses {
  private readonly running = new Set<Spawned>();

  constructor(private readonly infra: Infra) {}

  /** The side's bench API entry (quiet logs) with `env` on top of the infra's. */
  async api(side: Side, env: Record<string, string> = {}): Promise<Spawned> {
    const script = join(side.root, 'bench/order/bench-api.ts');
    const all = { LOG_LEVEL: 'warn', ...side.env, ...env };
    return this.keep(await spawnService(this.infra, 'api', all, [script, 'api']));
  }

  /** The side's writer process. */
  async worker(side: Side, env: Record<string, string> = {}): Promise<Spawned> {
    const script = join(side.root, 'src/worker.ts');
    return this.keep(await spawnService(this.infra, 'worker', env, [script]));
  }

  async stop(p: Spawned): Promise<void> {
    await p.stop();
    this.running.delete(p);
  }

  async stopAll(): Promise<void> {
    for (const p of [...this.running]) await this.stop(p).catch(() => {});
  }

  private keep(p: Spawned): Spawned {
    this.running.add(p);
    return p;
  }
}
