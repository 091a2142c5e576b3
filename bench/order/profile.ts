// Reads a V8 .cpuprofile (node --cpu-prof) and ranks functions by self time, optionally only over the
// samples taken inside a window given in CLOCK_MONOTONIC microseconds (process.hrtime.bigint() / 1000
// in any process on the machine: V8 stamps profiles with the same clock).
import { readFileSync } from 'node:fs';
import { categoryOf, type Frame } from './profile-categories.ts';

interface ProfileNode {
  id: number;
  children?: number[];
  callFrame: { functionName: string; url: string; lineNumber: number; columnNumber: number };
}

interface CpuProfile {
  nodes: ProfileNode[];
  startTime: number;
  endTime: number;
  samples: number[];
  timeDeltas: number[];
}

export interface SelfTime {
  name: string;
  where: string;
  samples: number;
  share: number;
}

export interface ProfileSummary {
  /** Samples counted (inside the window when one was given and it matched). */
  samples: number;
  windowMatched: boolean;
  /** Share of samples the process was idle (waiting for I/O). */
  idleShare: number;
  top: SelfTime[];
  /** Self time by origin: this repo's src/, a node_modules package, node: internals, V8 (GC, program). */
  byOrigin: Array<{ origin: string; samples: number; share: number }>;
  /** Inclusive time (self + callees) of this repo's functions and the named package frames. */
  inclusive: SelfTime[];
  /** Self time by category (profile-categories.ts), idle left out: shares of the busy samples. */
  categories: Array<{ category: string; samples: number; share: number }>;
}

function where(url: string, line: number, repoRoot: string): string {
  if (!url) return '';
  let u = url.replace(/^file:\/\//, '');
  if (u.startsWith(repoRoot)) u = u.slice(repoRoot.length + 1);
  return `${u}:${line + 1}`;
}

function origin(url: string, name: string, repoRoot: string): string {
  if (!url) return name.startsWith('(') ? name : 'native';
  const u = url.replace(/^file:\/\//, '');
  const nm = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(u);
  if (nm?.[1]) return nm[1];
  if (u.startsWith('node:')) return 'node (internals)';
  if (u.startsWith(repoRoot))
    return u
      .slice(repoRoot.length + 1)
      .split('/')
      .slice(0, 2)
      .join('/');
  return u;
}

/** Sample counts per node id: inside the window when one was given and any sample fell in it. */
function sampleCounts(profile: CpuProfile, windowUs?: { start: number; end: number }) {
  const inside = new Map<number, number>();
  const all = new Map<number, number>();
  let t = profile.startTime;
  for (let i = 0; i < profile.samples.length; i++) {
    t += profile.timeDeltas[i] ?? 0;
    const id = profile.samples[i] as number;
    all.set(id, (all.get(id) ?? 0) + 1);
    if (windowUs && t >= windowUs.start && t <= windowUs.end) inside.set(id, (inside.get(id) ?? 0) + 1);
  }
  const windowMatched = windowUs !== undefined && inside.size > 0;
  return { used: windowMatched ? inside : all, windowMatched };
}

/** A profile's tree: frames by node id and the stack of a sample's node, innermost first. */
class Tree {
  readonly byId: Map<number, ProfileNode>;
  private readonly parent = new Map<number, number>();

  constructor(
    profile: CpuProfile,
    private readonly repoRoot: string,
  ) {
    this.byId = new Map(profile.nodes.map((n) => [n.id, n]));
    for (const n of profile.nodes) for (const c of n.children ?? []) this.parent.set(c, n.id);
  }

  stack(id: number): ProfileNode[] {
    const out: ProfileNode[] = [];
    for (let cur: number | undefined = id; cur !== undefined; cur = this.parent.get(cur)) {
      const node = this.byId.get(cur);
      if (!node) break;
      out.push(node);
    }
    return out;
  }

  /** A function's name and place, and the key that tells it from others of the same name. */
  fn(node: ProfileNode): { name: string; where: string; key: string } {
    const { functionName, url, lineNumber } = node.callFrame;
    const name = functionName || '(anonymous)';
    const w = where(url, lineNumber, this.repoRoot);
    return { name, where: w, key: `${name}\u0000${w}` };
  }
}

const add = (m: Map<string, SelfTime>, f: { name: string; where: string; key: string }, n: number) => {
  const entry = m.get(f.key) ?? { name: f.name, where: f.where, samples: 0, share: 0 };
  entry.samples += n;
  m.set(f.key, entry);
};
const ranked = <T extends { samples: number }>(xs: Iterable<T>) =>
  [...xs].sort((a, b) => b.samples - a.samples);

/** Self time by function and by origin, and the idle samples. */
function selfTimes(tree: Tree, used: Map<number, number>, repoRoot: string) {
  const fns = new Map<string, SelfTime>();
  const origins = new Map<string, number>();
  let total = 0;
  let idle = 0;
  for (const [id, n] of used) {
    const node = tree.byId.get(id);
    if (!node) continue;
    total += n;
    const f = tree.fn(node);
    if (f.name === '(idle)') idle += n;
    add(fns, f, n);
    const o = origin(node.callFrame.url, f.name, repoRoot);
    origins.set(o, (origins.get(o) ?? 0) + n);
  }
  return { fns, origins, total, idle };
}

/** Inclusive: each sample counts once for every distinct interesting function on its stack. */
function inclusiveTimes(tree: Tree, used: Map<number, number>): Map<string, SelfTime> {
  const incl = new Map<string, SelfTime>();
  for (const [id, n] of used) {
    const seen = new Set<string>();
    for (const node of tree.stack(id)) {
      if (!interesting(node.callFrame.url, node.callFrame.functionName)) continue;
      const f = tree.fn(node);
      if (seen.has(f.key)) continue;
      seen.add(f.key);
      add(incl, f, n);
    }
  }
  return incl;
}

/** Self time by category, idle left out: shares of the busy samples. */
function categoryTimes(tree: Tree, used: Map<number, number>): ProfileSummary['categories'] {
  const cats = new Map<string, number>();
  let busy = 0;
  for (const [id, n] of used) {
    const c = categoryOf(tree.stack(id).map((node) => node.callFrame as Frame));
    if (c === 'idle') continue;
    busy += n;
    cats.set(c, (cats.get(c) ?? 0) + n);
  }
  return ranked([...cats].map(([category, n]) => ({ category, samples: n, share: n / Math.max(1, busy) })));
}

export function summarizeProfile(
  file: string,
  repoRoot: string,
  top = 10,
  windowUs?: { start: number; end: number },
): ProfileSummary {
  const profile = JSON.parse(readFileSync(file, 'utf8')) as CpuProfile;
  const { used, windowMatched } = sampleCounts(profile, windowUs);
  const tree = new Tree(profile, repoRoot);
  const { fns, origins, total, idle } = selfTimes(tree, used, repoRoot);
  const share = (f: SelfTime) => ({ ...f, share: f.samples / total });
  return {
    samples: total,
    windowMatched,
    idleShare: total ? idle / total : 0,
    top: ranked([...fns.values()].filter((f) => f.name !== '(idle)'))
      .slice(0, top)
      .map(share),
    byOrigin: ranked([...origins].map(([o, n]) => ({ origin: o, samples: n, share: n / total }))),
    inclusive: ranked(inclusiveTimes(tree, used).values()).slice(0, 25).map(share),
    categories: categoryTimes(tree, used),
  };
}

/** Frames worth an inclusive figure: this repo's code and the entry points of the hot packages. */
function interesting(url: string, name: string): boolean {
  if (url.includes('/src/')) return true;
  if (url.includes('/bullmq/') && /^(add|addJob|addStandardJob)$/.test(name)) return true;
  if (url.includes('/body-parser/') && name === 'jsonParser') return true;
  if (url.includes('/ioredis/built/Pipeline.js') && name === 'exec') return true;
  if (url.includes('/express/lib/response.js') && name === 'json') return true;
  return false;
}
