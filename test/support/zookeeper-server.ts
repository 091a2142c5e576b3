// A private standalone ZooKeeper for tests (Debian's zookeeperd, own zoo.cfg, free port, short ticks so
// sessions can expire in about a second); killed or paused by the test, always stopped with it.
import type { ChildProcess } from 'node:child_process';
import { rmSync, writeFileSync } from 'node:fs';
import { connect } from 'node:net';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { resourceDir, signalGroup, spawnOwned } from './cleanup.ts';
import { freePort } from './redis-server.ts';

const ZK_SERVER = '/usr/share/zookeeper/bin/zkServer.sh';

/** Asks a four-letter word; '' when the server does not answer. */
function fourLetters(port: number, word: string): Promise<string> {
  return new Promise((resolve) => {
    let out = '';
    const socket = connect(port, '127.0.0.1', () => socket.write(word));
    socket.setTimeout(1000, () => socket.destroy());
    socket.on('data', (d) => {
      out += d.toString();
    });
    socket.on('close', () => resolve(out));
    socket.on('error', () => resolve(''));
  });
}

export class ZooKeeperServer {
  private proc: ChildProcess | undefined;
  private readonly dir = resourceDir('zookeeper');

  private constructor(readonly port: number) {}

  static async start(): Promise<ZooKeeperServer> {
    const server = new ZooKeeperServer(await freePort());
    writeFileSync(
      join(server.dir, 'zoo.cfg'),
      [
        'tickTime=500',
        'initLimit=10',
        'syncLimit=5',
        `dataDir=${join(server.dir, 'data')}`,
        `clientPort=${server.port}`,
        'clientPortAddress=127.0.0.1',
        'admin.enableServer=false',
        '4lw.commands.whitelist=ruok,srvr',
        'minSessionTimeout=1000',
        'maxSessionTimeout=30000',
        'maxClientCnxns=0',
        '',
      ].join('\n'),
    );
    await server.spawn();
    return server;
  }

  get connectString(): string {
    return `127.0.0.1:${this.port}`;
  }

  private async spawn(): Promise<void> {
    const config = join(this.dir, 'zoo.cfg');
    const proc = spawnOwned(
      ZK_SERVER,
      ['start-foreground', config],
      { stdio: 'ignore', env: { ...process.env, ZOOCFGDIR: this.dir, ZOO_LOG_DIR: this.dir } },
      config,
    );
    this.proc = proc;
    for (let i = 0; i < 600; i++) {
      if (proc.exitCode !== null) throw new Error(`zookeeper exited with ${proc.exitCode}`);
      if (
        (await fourLetters(this.port, 'ruok')) === 'imok' &&
        (await fourLetters(this.port, 'srvr')).includes('Mode')
      )
        return;
      await sleep(50);
    }
    throw new Error(`zookeeper on port ${this.port} did not start`);
  }

  /** SIGKILL (a crash); restart() brings it back on the same port and data (sessions survive). */
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

  /** SIGSTOP: the server stops answering with its connections open. */
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
