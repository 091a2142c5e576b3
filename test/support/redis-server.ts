// Private redis-server processes for tests: each test file gets its own server on a free port, so no
// test touches data it did not create (and can kill/restart it freely); it dies with the test process.
import type { ChildProcess } from 'node:child_process';
import { rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { Redis, type RedisOptions } from 'ioredis';
import { resourceDir, spawnOwned } from './cleanup.ts';

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.unref();
    srv.on('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const addr = srv.address();
      const port = typeof addr === 'object' && addr ? addr.port : 0;
      srv.close(() => resolve(port));
    });
  });
}

export interface RedisServerOptions {
  /** Extra redis-server arguments, e.g. ['--appendonly', 'yes']. */
  args?: string[];
  /** The port to listen on (default: a free one). */
  port?: number;
}

export class RedisServer {
  private proc: ChildProcess | undefined;
  private readonly dir = resourceDir('redis');
  private readonly clients: Redis[] = [];

  private constructor(
    readonly port: number,
    private readonly opts: RedisServerOptions,
  ) {}

  static async start(opts: RedisServerOptions = {}): Promise<RedisServer> {
    const server = new RedisServer(opts.port ?? (await freePort()), opts);
    await server.spawn();
    return server;
  }

  /** True while the server process runs (not killed). */
  get running(): boolean {
    return this.proc !== undefined && this.proc.exitCode === null && this.proc.signalCode === null;
  }

  get url(): string {
    return `redis://127.0.0.1:${this.port}`;
  }

  /** A client that is closed with the server; failing fast so a dead server shows as an error, not a hang. */
  client(options: RedisOptions = {}): Redis {
    const c = new Redis(this.port, '127.0.0.1', { maxRetriesPerRequest: 1, ...options });
    c.on('error', () => {});
    this.clients.push(c);
    return c;
  }

  private async spawn(): Promise<void> {
    const args = [
      '--port',
      String(this.port),
      '--bind',
      '127.0.0.1',
      '--save',
      '',
      '--appendonly',
      'no',
      '--dir',
      this.dir,
      ...(this.opts.args ?? []),
    ];
    const proc = spawnOwned('redis-server', args, { stdio: 'ignore' }, 'redis-server');
    this.proc = proc;
    const probe = new Redis(this.port, '127.0.0.1', { lazyConnect: true, maxRetriesPerRequest: 0 });
    probe.on('error', () => {});
    try {
      for (let i = 0; i < 200; i++) {
        if (proc.exitCode !== null) throw new Error(`redis-server exited with ${proc.exitCode}`);
        try {
          await probe.connect();
          await probe.ping();
          return;
        } catch {
          probe.disconnect();
          await sleep(25);
        }
      }
      throw new Error(`redis-server on port ${this.port} did not start`);
    } finally {
      probe.disconnect();
    }
  }

  /** SIGKILL the server (a crash); restart() brings it back on the same port and data dir. */
  async kill(): Promise<void> {
    const proc = this.proc;
    if (!proc || proc.exitCode !== null || proc.signalCode !== null) return;
    const exited = new Promise((resolve) => proc.once('exit', resolve));
    proc.kill('SIGKILL');
    await exited;
  }

  async restart(): Promise<void> {
    await this.kill();
    await this.spawn();
  }

  async stop(): Promise<void> {
    for (const c of this.clients.splice(0)) c.disconnect();
    await this.kill();
    rmSync(this.dir, { recursive: true, force: true });
  }
}
