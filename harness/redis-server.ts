// Private redis-server processes for tests: each test file gets its own server on a free port, so no
// test touches data it did not create (and can kill/restart it freely); it dies with the test process.
import type { ChildProcess } from 'node:child_process';
import { createServer } from 'node:net';
import { Redis, type RedisOptions } from 'ioredis';
import { ChildServer, LOOPBACK, type Place, spawnAt } from './child-server.ts';

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
  /** Where it runs (default: loopback); elsewhere it listens on that address without protected mode. */
  place?: Place;
  /** Extra environment (e.g. libfaketime's). */
  env?: Record<string, string>;
}

export class RedisServer extends ChildServer {
  private readonly clients: Redis[] = [];

  private constructor(
    readonly port: number,
    private readonly opts: RedisServerOptions,
  ) {
    super('redis-server', 5000, opts.place ?? LOOPBACK);
  }

  static async start(opts: RedisServerOptions = {}): Promise<RedisServer> {
    const server = new RedisServer(opts.port ?? (await freePort()), opts);
    await server.spawn();
    return server;
  }

  get url(): string {
    return `redis://${this.place.ip}:${this.port}`;
  }

  /** A client that is closed with the server; failing fast so a dead server shows as an error, not a hang. */
  client(options: RedisOptions = {}): Redis {
    const c = new Redis(this.port, this.place.ip, { maxRetriesPerRequest: 1, ...options });
    c.on('error', () => {});
    this.clients.push(c);
    return c;
  }

  protected launch(): ChildProcess {
    const args = [
      '--port',
      String(this.port),
      '--bind',
      this.place.ip,
      // Off the loopback Redis refuses clients without a password unless told the network is private.
      ...(this.place === LOOPBACK ? [] : ['--protected-mode', 'no']),
      '--save',
      '',
      '--appendonly',
      'no',
      '--dir',
      this.dir,
      ...(this.opts.args ?? []),
    ];
    const env = this.opts.env ? { ...process.env, ...this.opts.env } : undefined;
    return spawnAt(this.place, 'redis-server', args, { stdio: 'ignore', env }, 'redis-server');
  }

  protected async ready(): Promise<boolean> {
    const probe = new Redis(this.port, this.place.ip, { lazyConnect: true, maxRetriesPerRequest: 0 });
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
