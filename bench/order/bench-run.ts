// One `npm run bench` run's context: its options, the private infrastructure, the processes it has
// spawned (by role, for the CPU tables), its Postgres probe and the invariant violations found so far.
import pg from 'pg';
import { type Infra, type Spawned, spawnService } from '../../harness/service.ts';
import type { Violation } from './checks.ts';
import { type CpuSnapshot, cpuSnapshot } from './cpu.ts';
import type { BenchOptions } from './options.ts';
import { BENCH_API } from './profiled-api.ts';
import { createSale } from './sales.ts';

export type Entry = 'api' | 'worker' | 'main';
const ROLE = { api: 'api', worker: 'writer', main: 'api+writer' } as const;
const API_ENV = { LOG_LEVEL: 'warn' };

/** Progress lines go to stderr, so that stdout holds the report alone. */
export function log(line: string): void {
  process.stderr.write(`${line}\n`);
}

export class BenchRun {
  readonly violations: Violation[] = [];
  readonly log = log;
  /** Processes whose CPU is reported, by role. */
  private readonly roles = new Map<unknown, { role: string; pid: number | undefined }>();
  private readonly children = new Set<Spawned>();
  private pgClient: pg.Client | undefined;

  constructor(
    readonly options: BenchOptions,
    readonly infra: Infra,
  ) {}

  get redis() {
    return this.infra.client;
  }

  /** The bench's API entry (bench/order/bench-api.ts) or the writer, on the run's infrastructure. */
  async spawn(entry: Entry, env: Record<string, string> = {}): Promise<Spawned> {
    // The worker is only recognised as started by its info line, so it keeps its log level.
    const child =
      entry === 'worker'
        ? await spawnService(this.infra, entry, env)
        : await spawnService(this.infra, entry, { ...API_ENV, ...env }, [BENCH_API, entry]);
    this.children.add(child);
    this.watch(child, ROLE[entry], child.proc.pid);
    return child;
  }

  /** Counts a process the run did not spawn itself (e.g. a profiled API) in the CPU tables. */
  watch(key: unknown, role: string, pid: number | undefined): void {
    this.roles.set(key, { role, pid });
  }

  async stop(child: Spawned): Promise<void> {
    await child.stop();
    this.children.delete(child);
    this.roles.delete(child);
  }

  createSale(url: string, productId: string, stock: number, shards: number): Promise<void> {
    return createSale(url, productId, stock, shards);
  }

  /** Postgres rows of a product's orders (a property: phases pass it on as a function). */
  readonly rows = (productId: string): Promise<number> => this.infra.rows(productId);

  /** Keeps the violations for the run's verdict and logs each as it is found. */
  record(found: Violation[]): void {
    for (const v of found) {
      this.violations.push(v);
      log(`  VIOLATION [${v.scenario}] ${v.check}: ${v.detail}`);
    }
  }

  /** Postgres backends serving the benchmark's database (the API's and the writer's pools). */
  async postgresPids(): Promise<number[]> {
    if (!this.pgClient) {
      this.pgClient = new pg.Client({ connectionString: this.infra.database.url });
      await this.pgClient.connect();
    }
    const r = await this.pgClient.query(
      'select pid from pg_stat_activity where datname = current_database() and pid <> pg_backend_pid()',
    );
    return r.rows.map((row: { pid: number }) => row.pid);
  }

  /** CPU seconds now of this process, Postgres' `postgres` backends and every watched process. */
  snapshot(postgres: number[]): CpuSnapshot {
    const pids: Record<string, Array<number | undefined>> = { postgres };
    for (const { role, pid } of this.roles.values()) {
      pids[role] ??= [];
      pids[role].push(pid);
    }
    return cpuSnapshot(pids);
  }

  /** Stops what is still running, last spawned first, then the infrastructure. */
  async close(): Promise<void> {
    for (const child of [...this.children].reverse()) await child.stop().catch(() => {});
    await this.pgClient?.end().catch(() => {});
    await this.infra.stop().catch(() => {});
  }
}
