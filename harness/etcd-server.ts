// A private single-member etcd for tests, on free ports and its own data dir; killed (or paused and
// resumed) by the test, and always stopped with the test process.
import type { ChildProcess } from 'node:child_process';
import { ChildServer, LOOPBACK, type Place, spawnAt } from './child-server.ts';
import { freePort } from './redis-server.ts';

export class EtcdServer extends ChildServer {
  private constructor(
    readonly port: number,
    private readonly peerPort: number,
    place: Place,
  ) {
    super('etcd', 10_000, place);
  }

  /** A member at `place` (default: loopback). */
  static async start(place: Place = LOOPBACK): Promise<EtcdServer> {
    const server = new EtcdServer(await freePort(), await freePort(), place);
    await server.spawn();
    return server;
  }

  get endpoint(): string {
    return `http://${this.place.ip}:${this.port}`;
  }

  protected launch(): ChildProcess {
    const client = this.endpoint;
    const peer = `http://${this.place.ip}:${this.peerPort}`;
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
    return spawnAt(this.place, 'etcd', args, { stdio: 'ignore' }, `--data-dir ${this.dir}`);
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
