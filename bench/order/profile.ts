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

export function summarizeProfile(
  file: string,
  repoRoot: string,
  top = 10,
  windowUs?: { start: number; end: number },
): ProfileSummary {
  const profile = JSON.parse(readFileSync(file, 'utf8')) as CpuProfile;
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const counts = new Map<number, number>();
  let t = profile.startTime;
  let matched = 0;
  const all = new Map<number, number>();
  for (let i = 0; i < profile.samples.length; i++) {
    t += profile.timeDeltas[i] ?? 0;
    const id = profile.samples[i] as number;
    all.set(id, (all.get(id) ?? 0) + 1);
    if (windowUs && t >= windowUs.start && t <= windowUs.end) {
      counts.set(id, (counts.get(id) ?? 0) + 1);
      matched += 1;
    }
  }
  const windowMatched = windowUs !== undefined && matched > 0;
  const used = windowMatched ? counts : all;
  const parent = new Map<number, number>();
  for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
  let total = 0;
  const fns = new Map<string, SelfTime>();
  const origins = new Map<string, number>();
  let idle = 0;
  for (const [id, n] of used) {
    const node = byId.get(id);
    if (!node) continue;
    total += n;
    const { functionName, url, lineNumber } = node.callFrame;
    const name = functionName || '(anonymous)';
    if (name === '(idle)') idle += n;
    const w = where(url, lineNumber, repoRoot);
    const key = `${name}\u0000${w}`;
    const entry = fns.get(key) ?? { name, where: w, samples: 0, share: 0 };
    entry.samples += n;
    fns.set(key, entry);
    const o = origin(url, name, repoRoot);
    origins.set(o, (origins.get(o) ?? 0) + n);
  }
  // Inclusive: each sample counts once for every distinct function on its stack.
  const incl = new Map<string, SelfTime>();
  for (const [id, n] of used) {
    const seen = new Set<string>();
    for (let cur: number | undefined = id; cur !== undefined; cur = parent.get(cur)) {
      const node = byId.get(cur);
      if (!node) break;
      const { functionName, url, lineNumber } = node.callFrame;
      if (!interesting(url, functionName)) continue;
      const name = functionName || '(anonymous)';
      const w = where(url, lineNumber, repoRoot);
      const key = `${name}\u0000${w}`;
      if (seen.has(key)) continue;
      seen.add(key);
      const entry = incl.get(key) ?? { name, where: w, samples: 0, share: 0 };
      entry.samples += n;
      incl.set(key, entry);
    }
  }
  const cats = new Map<string, number>();
  let busy = 0;
  for (const [id, n] of used) {
    const stack: Frame[] = [];
    for (let cur: number | undefined = id; cur !== undefined; cur = parent.get(cur)) {
      const node = byId.get(cur);
      if (node) stack.push(node.callFrame);
    }
    const c = categoryOf(stack);
    if (c === 'idle') continue;
    busy += n;
    cats.set(c, (cats.get(c) ?? 0) + n);
  }
  const categories = [...cats.entries()]
    .map(([category, n]) => ({ category, samples: n, share: n / Math.max(1, busy) }))
    .sort((a, b) => b.samples - a.samples);
  const inclusive = [...incl.values()]
    .sort((a, b) => b.samples - a.samples)
    .slice(0, 25)
    .map((f) => ({ ...f, share: f.samples / total }));
  const ranked = [...fns.values()]
    .filter((f) => f.name !== '(idle)')
    .sort((a, b) => b.samples - a.samples)
    .slice(0, top)
    .map((f) => ({ ...f, share: f.samples / total }));
  const byOrigin = [...origins.entries()]
    .map(([o, n]) => ({ origin: o, samples: n, share: n / total }))
    .sort((a, b) => b.samples - a.samples);
  return {
    samples: total,
    windowMatched,
    idleShare: total ? idle / total : 0,
    top: ranked,
    byOrigin,
    inclusive,
    categories,
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
