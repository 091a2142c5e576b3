// A private single-member etcd for tests, on free ports and its own data dir; killed (or paused and
// resumed) by the test, and always stopped with the test process.
import type { ChildProcess } from 'node:child_process';
import { ChildServer } from './child-server.ts';
import { spawnOwned } from './cleanup.ts';
import { freePort } from './redis-server.ts';

export class EtcdServer extends ChildServer {
  private constructor(
    readonly port: number,
    private readonly peerPort: number,
  ) {
    super('etcd', 10_000);
  }

  static async start(): Promise<EtcdServer> {
    const server = new EtcdServer(await freePort(), await freePort());
    await server.spawn();
    return server;
  }

  get endpoint(): string {
    return `http://127.0.0.1:${this.port}`;
  }

  protected launch(): ChildProcess {
    const client = this.endpoint;
    const peer = `http://127.0.0.1:${this.peerPort}`;
    const args = [
      '--name',
      'n1',
      '--data-dir',
      this.dir,
      '--listen-client-urls',
      client,
      '--advertise-client-urls',
      client,
      '--listen-peer-urls',
      peer,
      '--initial-advertise-peer-urls',
      peer,
      '--initial-cluster',
      `n1=${peer}`,
      '--log-level',
      'error',
    ];
    return spawnOwned('etcd', args, { stdio: 'ignore' }, `--data-dir ${this.dir}`);
  }

  protected async ready(): Promise<boolean> {
    try {
      const res = await fetch(`${this.endpoint}/health`);
      return ((await res.json()) as { health?: string }).health === 'true';
    } catch {
      return false; // not listening yet
    }
  }
}
