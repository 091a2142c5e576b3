// A private single-member etcd for tests, on free ports and its own data dir; killed (or paused and
// resumed) by the test, and always stopped with the test process.
import type { ChildProcess } from 'node:child_process';
import { rmSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import { resourceDir, signalGroup, spawnOwned } from './cleanup.ts';
import { freePort } from './redis-server.ts';

export class EtcdServer {
  private proc: ChildProcess | undefined;
  private readonly dir = resourceDir('etcd');

  private constructor(
    readonly port: number,
    private readonly peerPort: number,
  ) {}

  static async start(): Promise<EtcdServer> {
    const server = new EtcdServer(await freePort(), await freePort());
    await server.spawn();
    return server;
  }

  get endpoint(): string {
    return `http://127.0.0.1:${this.port}`;
  }

  private async spawn(): Promise<void> {
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
    const proc = spawnOwned('etcd', args, { stdio: 'ignore' }, `--data-dir ${this.dir}`);
    this.proc = proc;
    for (let i = 0; i < 400; i++) {
      if (proc.exitCode !== null) throw new Error(`etcd exited with ${proc.exitCode}`);
      try {
        const res = await fetch(`${client}/health`);
        const body = (await res.json()) as { health?: string };
        if (body.health === 'true') return;
      } catch {
        // not listening yet
      }
      await sleep(25);
    }
    throw new Error(`etcd on port ${this.port} did not become healthy`);
  }

  /** SIGKILL (a crash); restart() brings it back on the same ports and data. */
  async kill(): Promise<void> {
    const proc = this.proc;
    if (!proc || proc.exitCode !== null || proc.signalCode !== null) return;
    const exited = new Promise((resolve) => proc.once('exit', resolve));
    signalGroup(proc, 'SIGKILL');
    await exited;
  }

  async restart(): Promise<void> {
    await this.kill();
    await this.spawn();
  }

  /** SIGSTOP: the server stops answering with its connections open (a hung server). */
  pause(): void {
    if (this.proc) signalGroup(this.proc, 'SIGSTOP');
  }

  resume(): void {
    if (this.proc) signalGroup(this.proc, 'SIGCONT');
  }

  async stop(): Promise<void> {
    this.resume();
    await this.kill();
    rmSync(this.dir, { recursive: true, force: true });
  }
}
