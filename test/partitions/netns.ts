// A private network of Linux network namespaces for one partition scenario: a bridge in the root
// namespace (the test's side, with a TCP forwarder to the host's Postgres), one namespace per node
// joined to it by a veth pair, and pairwise partitions that make packets vanish (no error, no reset:
// a real partition). Everything is named after the owning pid, removed by destroy(), at the
// test process's exit, and by sweepLeftovers() after a hard kill.
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { alive, atExit } from '../../harness/cleanup.ts';

/** Namespaces `fsp-<pid>-<scenario>-<node>`, bridges `fpb<pid>-<scenario>`, veths `fpv<pid>-<scenario><k>`. */
const NS_RE = /^fsp-(\d+)-/;
const LINK_RE = /^fp[bvq](\d+)-/;
/** A locally administered MAC no interface has: frames sent to it reach nobody. */
const NOWHERE = '02:00:00:de:ad:01';

function ip(...args: string[]): string {
  return execFileSync('ip', args, { encoding: 'utf8', timeout: 10_000, stdio: ['ignore', 'pipe', 'pipe'] });
}

/** ip, ignoring failure (the thing is already gone). */
function ipQuiet(...args: string[]): void {
  try {
    ip(...args);
  } catch {
    // already gone
  }
}

/** Why this machine cannot run the suite (not root, no `ip netns`), or undefined when it can. */
export function unsupported(): string | undefined {
  if (process.getuid?.() !== 0) return 'not running as root (network namespaces need CAP_NET_ADMIN)';
  const probe = `fsp-${process.pid}-probe`;
  try {
    ip('netns', 'add', probe);
    ip('netns', 'del', probe);
    return undefined;
  } catch (err) {
    ipQuiet('netns', 'del', probe);
    return `\`ip netns\` is unavailable: ${(err as Error).message.split('\n')[0]}`;
  }
}

/** Kills every process inside a namespace and deletes it. */
function deleteNamespace(ns: string): void {
  let pids: number[] = [];
  try {
    pids = ip('netns', 'pids', ns).split('\n').filter(Boolean).map(Number);
  } catch {
    // no such namespace
  }
  for (const pid of pids) {
    try {
      process.kill(pid, 'SIGCONT');
      process.kill(pid, 'SIGKILL');
    } catch {
      // already gone
    }
  }
  ipQuiet('netns', 'del', ns);
}

/** Removes namespaces and links left by runs whose process is gone (a kill -9 of the suite). */
export function sweepLeftovers(): void {
  const dead = (name: string, re: RegExp) => {
    const pid = Number(re.exec(name)?.[1]);
    return Number.isInteger(pid) && pid > 0 && !alive(pid);
  };
  for (const line of ip('netns', 'list').split('\n')) {
    const ns = line.split(' ')[0] ?? '';
    if (dead(ns, NS_RE)) deleteNamespace(ns);
  }
  for (const line of ip('-o', 'link', 'show').split('\n')) {
    const name = (line.split(': ')[1] ?? '').split('@')[0] ?? '';
    if (dead(name, LINK_RE)) ipQuiet('link', 'del', name);
  }
}

/** A /24 of 10.201.0.0/16 no route of this machine uses yet. */
function freeSubnet(seed: number): number {
  const routes = readFileSync('/proc/net/route', 'utf8');
  const used = new Set<number>();
  for (const line of routes.split('\n').slice(1)) {
    const dest = Number.parseInt(line.split('\t')[1] ?? '', 16);
    // Little-endian hex: 10.201.x.0 is 0x00xxC90A.
    if ((dest & 0xffff) === 0xc90a) used.add((dest >>> 16) & 0xff);
  }
  for (let k = 0; k < 250; k++) {
    const x = 1 + ((seed + k) % 250);
    if (!used.has(x)) return x;
  }
  throw new Error('no free 10.201.x.0/24 subnet');
}

/** One node's namespace: its address on the bridge, and how to run a command inside it. */
export interface Host {
  name: string;
  ns: string;
  ip: string;
  /** Prefix for a command run inside the namespace. */
  wrap: string[];
}

export class Net {
  private readonly hosts: Host[] = [];
  private readonly cuts = new Set<string>();
  private destroyed = false;
  private readonly forget: () => void;

  private constructor(
    private readonly tag: string,
    private readonly subnet: number,
    readonly bridge: string,
  ) {
    this.forget = atExit(`netns:${tag}`, () => this.destroySync());
  }

  /** The root namespace's address on the bridge (where the test and its Postgres forwarder listen). */
  get gateway(): string {
    return `10.201.${this.subnet}.1`;
  }

  /** A bridge for scenario `scenario` (one letter or digit), on a free 10.201.x.0/24. */
  static create(scenario: string): Net {
    const tag = `${process.pid}-${scenario}`;
    const subnet = freeSubnet(process.pid + scenario.charCodeAt(0) * 7);
    const net = new Net(tag, subnet, `fpb${tag}`);
    ip('link', 'add', net.bridge, 'type', 'bridge');
    ip('addr', 'add', `${net.gateway}/24`, 'dev', net.bridge);
    ip('link', 'set', net.bridge, 'up');
    return net;
  }

  /** A namespace joined to the bridge, with loopback up and address 10.201.x.(k+2). */
  host(name: string): Host {
    const k = this.hosts.length;
    const ns = `fsp-${this.tag}-${name}`;
    const outer = `fpv${this.tag}${k}`;
    const inner = `fpq${this.tag}${k}`;
    const address = `10.201.${this.subnet}.${k + 2}`;
    const host: Host = { name, ns, ip: address, wrap: ['ip', 'netns', 'exec', ns] };
    // Known before it exists: destroy() removes a half-made host too.
    this.hosts.push(host);
    deleteNamespace(ns);
    ip('netns', 'add', ns);
    ip('link', 'add', outer, 'type', 'veth', 'peer', 'name', inner);
    ip('link', 'set', inner, 'netns', ns);
    ip('link', 'set', outer, 'master', this.bridge);
    ip('link', 'set', outer, 'up');
    ip('-n', ns, 'link', 'set', 'lo', 'up');
    ip('-n', ns, 'link', 'set', inner, 'name', 'eth0');
    ip('-n', ns, 'addr', 'add', `${address}/24`, 'dev', 'eth0');
    ip('-n', ns, 'link', 'set', 'eth0', 'up');
    return host;
  }

  /**
   * Partitions `a` from each of `others`, both ways: each side sends what it has for the other to a
   * hardware address nobody has (a permanent neighbour entry), so packets vanish without an error or
   * a reset and open connections hang, as on a real partition. (A blackhole route would fail the
   * sender's calls at once; this kernel has no tc drop actions.)
   */
  cut(a: Host, others: Host[]): void {
    for (const b of others) {
      for (const [from, to] of [
        [a, b],
        [b, a],
      ] as const) {
        const key = `${from.ns}>${to.ip}`;
        if (this.cuts.has(key)) continue;
        ip('-n', from.ns, 'neigh', 'replace', to.ip, 'lladdr', NOWHERE, 'dev', 'eth0', 'nud', 'permanent');
        this.cuts.add(key);
      }
    }
  }

  /** Removes every partition. */
  heal(): void {
    for (const key of this.cuts) {
      const [ns, to] = key.split('>') as [string, string];
      ipQuiet('-n', ns, 'neigh', 'del', to, 'dev', 'eth0');
    }
    this.cuts.clear();
  }

  /** Kills what still runs in the namespaces, deletes them and the bridge. */
  destroy(): void {
    this.destroySync();
    this.forget();
  }

  private destroySync(): void {
    if (this.destroyed) return;
    this.destroyed = true;
    this.hosts.forEach((h, k) => {
      deleteNamespace(h.ns);
      // Namespace teardown is asynchronous in the kernel: the veth goes now, not after it.
      ipQuiet('link', 'del', `fpv${this.tag}${k}`);
    });
    ipQuiet('link', 'del', this.bridge);
  }
}
