// A private standalone ZooKeeper for tests (Debian's zookeeperd, own zoo.cfg, free port, short ticks so
// sessions can expire in about a second); killed or paused by the test, always stopped with it.
import type { ChildProcess } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { connect } from 'node:net';
import { join } from 'node:path';
import { ChildServer } from './child-server.ts';
import { spawnOwned } from './cleanup.ts';
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

/** A standalone ZooKeeper; restart() keeps its port and data dir, so sessions survive a restart. */
export class ZooKeeperServer extends ChildServer {
  private constructor(readonly port: number) {
    super('zookeeper', 30_000);
  }

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

  protected launch(): ChildProcess {
    const config = join(this.dir, 'zoo.cfg');
    return spawnOwned(
      ZK_SERVER,
      ['start-foreground', config],
      { stdio: 'ignore', env: { ...process.env, ZOOCFGDIR: this.dir, ZOO_LOG_DIR: this.dir } },
      config,
    );
  }

  /** ruok answers before the server serves; srvr shows its Mode only once it does. */
  protected async ready(): Promise<boolean> {
    return (
      (await fourLetters(this.port, 'ruok')) === 'imok' &&
      (await fourLetters(this.port, 'srvr')).includes('Mode')
    );
  }
}
