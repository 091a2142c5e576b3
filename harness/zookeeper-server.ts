// A private standalone ZooKeeper for tests (Debian's zookeeperd, own zoo.cfg, free port, short ticks so
// sessions can expire in about a second); killed or paused by the test, always stopped with it.
import type { ChildProcess } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { connect } from 'node:net';
import { join } from 'node:path';
import { ChildServer, LOOPBACK, type Place, spawnAt } from './child-server.ts';
import { freePort } from './redis-server.ts';

export const ZK_SERVER = '/usr/share/zookeeper/bin/zkServer.sh';

/** Asks a four-letter word; '' when the server does not answer. */
export function fourLetters(port: number, word: string, host = '127.0.0.1'): Promise<string> {
  return new Promise((resolve) => {
    let out = '';
    const socket = connect(port, host, () => socket.write(word));
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
  private constructor(
    readonly port: number,
    place: Place,
  ) {
    super('zookeeper', 30_000, place);
  }

  /** A server at `place` (default: loopback). */
  static async start(place: Place = LOOPBACK): Promise<ZooKeeperServer> {
    const server = new ZooKeeperServer(await freePort(), place);
    writeFileSync(
      join(server.dir, 'zoo.cfg'),
      [
        'tickTime=500',
        'initLimit=10',
        'syncLimit=5',
        `dataDir=${join(server.dir, 'data')}`,
        `clientPort=${server.port}`,
        `clientPortAddress=${place.ip}`,
        'admin.enableServer=false',
        '4lw.commands.whitelist=ruok,srvr,cons,dump',
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
    return `${this.place.ip}:${this.port}`;
  }

  protected launch(): ChildProcess {
    const config = join(this.dir, 'zoo.cfg');
    return spawnAt(
      this.place,
      ZK_SERVER,
      ['start-foreground', config],
      { stdio: 'ignore', env: { ...process.env, ZOOCFGDIR: this.dir, ZOO_LOG_DIR: this.dir } },
      config,
    );
  }

  /** ruok answers before the server serves; srvr shows its Mode only once it does. */
  protected async ready(): Promise<boolean> {
    return (
      (await fourLetters(this.port, 'ruok', this.place.ip)) === 'imok' &&
      (await fourLetters(this.port, 'srvr', this.place.ip)).includes('Mode')
    );
  }
}
