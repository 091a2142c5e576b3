// Private redis-server processes for tests: each test file gets its own server on a free port, so no
// test touches data it did not create (and can kill/restart it freely); it dies with the test process.
import type { ChildProcess } from 'node:child_process';
import { createServer } from 'node:net';
import { Redis, type RedisOptions } from 'ioredis';
import { ChildServer } from './child-server.ts';
import { spawnOwned } from './cleanup.ts';

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

export class RedisServer extends ChildServer {
  private readonly clients: Redis[] = [];

  private constructor(
    readonly port: number,
    private readonly opts: RedisServerOptions,
  ) {
    super('redis-server', 5000);
  }

  static async start(opts: RedisServerOptions = {}): Promise<RedisServer> {
    const server = new RedisServer(opts.port ?? (await freePort()), opts);
    await server.spawn();
    return server;
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

  protected launch(): ChildProcess {
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
    return spawnOwned('redis-server', args, { stdio: 'ignore' }, 'redis-server');
  }

  protected async ready(): Promise<boolean> {
    const probe = new Redis(this.port, '127.0.0.1', { lazyConnect: true, maxRetriesPerRequest: 0 });
    probe.on('error', () => {});
    try {
      await probe.connect();
      await probe.ping();
      return true;
    } catch {
      return false;
    } finally {
      probe.disconnect();
    }
  }

  override async stop(): Promise<void> {
    for (const c of this.clients.splice(0)) c.disconnect();
    await super.stop();
  }
}
