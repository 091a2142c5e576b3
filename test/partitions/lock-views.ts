// The test's look into etcd and ZooKeeper (from the root namespace, which every partition spares):
// who holds a shard lock there now, as the lock service sees it. The holder is the head of the lock's
// queue (etcd: the key with the smallest create revision; ZooKeeper: the lowest sequence node), named
// by what dies with its client's session (etcd: the key's lease; ZooKeeper: the session id).
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { fourLetters } from '../../harness/zookeeper-server.ts';

const run = promisify(execFile);

export interface LockView {
  /** The session (lease / session id) of the queue's head for lock `name`, if anyone holds it. */
  head(name: string): Promise<string | undefined>;
  /** Every live session of the service's clients. */
  sessions(): Promise<Set<string>>;
}

interface EtcdKv {
  key: string;
  create_revision: number;
  lease?: string;
}

/** etcd, read with etcdctl (JSON output: keys base64, lease ids decimal). */
export class EtcdView implements LockView {
  constructor(private readonly endpoint: string) {}

  private async ctl(...args: string[]): Promise<Record<string, unknown>> {
    const { stdout } = await run('etcdctl', ['--endpoints', this.endpoint, '-w', 'json', ...args], {
      timeout: 5000,
    });
    // Lease ids are 64-bit: kept as text, a JSON number would round them.
    return JSON.parse(stdout.replace(/"(id|lease)":(\d+)/g, '"$1":"$2"')) as Record<string, unknown>;
  }

  async head(name: string): Promise<string | undefined> {
    const out = await this.ctl('get', '--prefix', `flashsale-lock/${name}/`);
    const kvs = ((out.kvs as EtcdKv[] | undefined) ?? []).sort(
      (a, b) => a.create_revision - b.create_revision,
    );
    return kvs[0]?.lease;
  }

  async sessions(): Promise<Set<string>> {
    const out = await this.ctl('lease', 'list');
    return new Set(((out.leases as { id: string }[] | undefined) ?? []).map((l) => l.id));
  }
}

/** ZooKeeper, read with its four-letter words: `dump` (ephemerals by session) and `cons`. */
export class ZooKeeperView implements LockView {
  constructor(
    private readonly host: string,
    private readonly port: number,
  ) {}

  /** Ephemeral node paths by session id, from `dump`. */
  private async ephemerals(): Promise<Map<string, string[]>> {
    const text = await fourLetters(this.port, 'dump', this.host);
    const bySession = new Map<string, string[]>();
    let session: string | undefined;
    for (const line of text.split('\n')) {
      const sid = /^(0x[0-9a-f]+):$/.exec(line.trim());
      if (sid) session = sid[1];
      else if (session && line.trim().startsWith('/'))
        bySession.set(session, [...(bySession.get(session) ?? []), line.trim()]);
    }
    return bySession;
  }

  async head(name: string): Promise<string | undefined> {
    let best: { seq: string; session: string } | undefined;
    for (const [session, paths] of await this.ephemerals()) {
      for (const p of paths) {
        const m = /-lock-(\d+)$/.exec(p);
        if (!m || !p.startsWith(`/flashsale-lock/${name}/`)) continue;
        if (!best || (m[1] as string) < best.seq) best = { seq: m[1] as string, session };
      }
    }
    return best?.session;
  }

  async sessions(): Promise<Set<string>> {
    const text = await fourLetters(this.port, 'cons', this.host);
    return new Set([...text.matchAll(/sid=(0x[0-9a-f]+)/g)].map((m) => m[1] as string));
  }

  /** The session of the client connected from `ip`. */
  async sessionFrom(ip: string): Promise<string | undefined> {
    const text = await fourLetters(this.port, 'cons', this.host);
    const line = text.split('\n').find((l) => l.trim().startsWith(`/${ip}:`));
    return line ? /sid=(0x[0-9a-f]+)/.exec(line)?.[1] : undefined;
  }
}
