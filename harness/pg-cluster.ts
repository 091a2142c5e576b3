// A private PostgreSQL cluster (initdb + pg_ctl on a free port) for tests that stop, crash or restart
// Postgres. Binaries from PG_BIN or /usr/lib/postgresql/<ver>/bin; as root, commands run as `postgres`.
import { execFile, execFileSync } from 'node:child_process';
import { chownSync, existsSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import pg from 'pg';
import { atExit, resourceDir } from './cleanup.ts';
import { freePort } from './redis-server.ts';

const exec = promisify(execFile);

export interface PgClusterOptions {
  /** Extra server settings, e.g. { fsync: 'off' } (passed as -c name=value). */
  settings?: Record<string, string>;
  /** Database created for the test; default 'flashsale'. */
  database?: string;
}

/** Directory holding initdb/pg_ctl: $PG_BIN, else the newest /usr/lib/postgresql/<version>/bin. */
export function findPgBin(): string {
  const fromEnv = process.env.PG_BIN;
  if (fromEnv) return fromEnv;
  const root = '/usr/lib/postgresql';
  const versions = existsSync(root)
    ? readdirSync(root)
        .filter((v) => existsSync(join(root, v, 'bin', 'initdb')))
        .sort((a, b) => Number(b) - Number(a))
    : [];
  if (versions.length === 0) {
    throw new Error('no PostgreSQL server binaries found in /usr/lib/postgresql/*/bin; set PG_BIN');
  }
  return join(root, versions[0] as string, 'bin');
}

/** uid/gid of an OS user, or null when there is none. */
function osUser(name: string): { uid: number; gid: number } | null {
  try {
    const id = (flag: string) => Number(execFileSync('id', [flag, name], { encoding: 'utf8' }).trim());
    return { uid: id('-u'), gid: id('-g') };
  } catch {
    return null;
  }
}

export class PgCluster {
  private running = false;
  private forgetAtExit = () => {};

  private constructor(
    readonly dir: string,
    readonly port: number,
    private readonly bin: string,
    private readonly runAs: string | null,
    private readonly settings: Record<string, string>,
    readonly database: string,
  ) {}

  /** initdb + start + CREATE DATABASE. */
  static async start(options: PgClusterOptions = {}): Promise<PgCluster> {
    const bin = findPgBin();
    const dir = resourceDir('pg');
    const asRoot = process.getuid?.() === 0;
    let runAs: string | null = null;
    if (asRoot) {
      const user = osUser('postgres');
      if (!user) throw new Error('running as root needs a `postgres` OS user to run initdb/postgres as');
      chownSync(dir, user.uid, user.gid);
      runAs = 'postgres';
    }
    const cluster = new PgCluster(
      dir,
      await freePort(),
      bin,
      runAs,
      // A test cluster: small, and quick to start and stop.
      { shared_buffers: '32MB', max_connections: '100', ...options.settings },
      options.database ?? 'flashsale',
    );
    cluster.forgetAtExit = atExit(`pg:${dir}`, () => cluster.destroySync());
    try {
      await cluster.run('initdb', [
        '-A',
        'trust',
        '-U',
        'postgres',
        '-E',
        'UTF8',
        '--no-sync',
        '-D',
        cluster.dataDir,
      ]);
      await cluster.startServer();
      const admin = new pg.Client({ connectionString: cluster.urlFor('postgres') });
      await admin.connect();
      try {
        await admin.query(`CREATE DATABASE ${cluster.database}`);
      } finally {
        await admin.end();
      }
    } catch (err) {
      await cluster.destroy().catch(() => {});
      throw err;
    }
    return cluster;
  }

  get dataDir(): string {
    return join(this.dir, 'data');
  }

  /** URL of the test database (TCP on 127.0.0.1). */
  get url(): string {
    return this.urlFor(this.database);
  }

  urlFor(database: string): string {
    return `postgres://postgres@127.0.0.1:${this.port}/${database}`;
  }

  get isRunning(): boolean {
    return this.running;
  }

  /** pg_ctl start, waiting until it accepts connections. */
  async startServer(): Promise<void> {
    const opts = [
      `-p ${this.port}`,
      `-k ${this.dir}`,
      '-c listen_addresses=127.0.0.1',
      ...Object.entries(this.settings).map(([k, v]) => `-c ${k}=${v}`),
    ].join(' ');
    await this.run('pg_ctl', [
      '-D',
      this.dataDir,
      '-o',
      opts,
      '-l',
      join(this.dir, 'server.log'),
      '-w',
      '-t',
      '60',
      'start',
    ]);
    this.running = true;
  }

  /** pg_ctl stop; 'immediate' is a crash (no checkpoint, clients cut off), 'fast' a clean stop. */
  async stopServer(mode: 'immediate' | 'fast' = 'immediate'): Promise<void> {
    if (!this.running) return;
    await this.run('pg_ctl', ['-D', this.dataDir, '-m', mode, '-w', '-t', '60', 'stop']);
    this.running = false;
  }

  /**
   * For a process 'exit' hook (synchronous): stops the server immediately if it runs and removes
   * its directory. Never throws.
   */
  destroySync(): void {
    try {
      if (existsSync(join(this.dataDir, 'postmaster.pid'))) {
        const path = join(this.bin, 'pg_ctl');
        const args = ['-D', this.dataDir, '-m', 'immediate', '-w', '-t', '30', 'stop'];
        if (this.runAs) execFileSync('runuser', ['-u', this.runAs, '--', path, ...args], { stdio: 'ignore' });
        else execFileSync(path, args, { stdio: 'ignore' });
      }
    } catch {
      // already gone
    }
    this.running = false;
    rmSync(this.dir, { recursive: true, force: true });
  }

  /**
   * Immediate shutdown by signal (SIGQUIT to the postmaster, what `pg_ctl stop -m immediate` sends),
   * without pg_ctl's start-up latency: for cutting Postgres at a precise moment. Waits until it is gone.
   */
  async crash(): Promise<void> {
    const pidFile = join(this.dataDir, 'postmaster.pid');
    if (!existsSync(pidFile)) return;
    const pid = Number(readFileSync(pidFile, 'utf8').split('\n')[0]);
    try {
      process.kill(pid, 'SIGQUIT');
    } catch {
      // already gone
    }
    for (let i = 0; i < 600; i++) {
      try {
        process.kill(pid, 0);
      } catch {
        break;
      }
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
    this.running = false;
  }

  /** Stops the server (if running) and removes its directory. */
  async destroy(): Promise<void> {
    try {
      if (existsSync(join(this.dataDir, 'postmaster.pid'))) {
        await this.run('pg_ctl', ['-D', this.dataDir, '-m', 'immediate', '-w', '-t', '60', 'stop']).catch(
          () => {},
        );
      }
    } finally {
      this.running = false;
      rmSync(this.dir, { recursive: true, force: true });
      this.forgetAtExit();
    }
  }

  /** The server log (for diagnosing a failed start). */
  logPath(): string {
    return join(this.dir, 'server.log');
  }

  private async run(tool: string, args: string[]): Promise<void> {
    const path = join(this.bin, tool);
    const [cmd, argv] = this.runAs ? ['runuser', ['-u', this.runAs, '--', path, ...args]] : [path, args];
    try {
      await exec(cmd, argv, { cwd: this.dir, timeout: 90_000 });
    } catch (err) {
      const e = err as { stderr?: string; stdout?: string; message: string };
      throw new Error(`${tool} failed: ${e.stderr || e.stdout || e.message}`.trim());
    }
  }
}
