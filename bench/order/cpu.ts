// Where the machine's CPU went during a load (Linux /proc): per process (by pid, grouped by role) and
// the whole machine (which includes anything else running on it).
import { readdirSync, readFileSync } from 'node:fs';

const TICKS_PER_SECOND = 100; // USER_HZ on Linux

/** utime + stime of a process in seconds; NaN when it is gone or /proc is not there. */
export function processCpuSeconds(pid: number | undefined): number {
  if (pid === undefined) return Number.NaN;
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // Fields after the command name (which may contain spaces) start after the last ')'.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return (Number(fields[11]) + Number(fields[12])) / TICKS_PER_SECOND;
  } catch {
    return Number.NaN;
  }
}

/**
 * CPU seconds of a process and every process under it: an API started with API_WORKERS > 1 is a
 * cluster primary whose forked workers do the answering. NaN when the process is gone.
 */
export function treeCpuSeconds(pid: number | undefined): number {
  if (pid === undefined) return Number.NaN;
  let sum = processCpuSeconds(pid);
  for (const child of childrenOf(pid)) {
    const c = treeCpuSeconds(child);
    if (Number.isFinite(c)) sum += c;
  }
  return sum;
}

/** The child pids of a process (every thread's), from /proc; none when it is gone. */
function childrenOf(pid: number): number[] {
  try {
    return readdirSync(`/proc/${pid}/task`).flatMap((tid) =>
      readFileSync(`/proc/${pid}/task/${tid}/children`, 'utf8').split(' ').filter(Boolean).map(Number),
    );
  } catch {
    return [];
  }
}

/**
 * CPU seconds of the whole machine since boot (all cores): busy (any use), of which interrupt work
 * (irq + softirq: much of loopback networking runs there, attributed to no process) and steal (time
 * the hypervisor gave to someone else).
 */
export function machineCpuSeconds(): { busy: number; interrupts: number; steal: number } {
  try {
    const line = readFileSync('/proc/stat', 'utf8').split('\n')[0] ?? '';
    const [user = 0, nice = 0, system = 0, , , irq = 0, softirq = 0, steal = 0] = line
      .trim()
      .split(/\s+/)
      .slice(1)
      .map(Number);
    const t = TICKS_PER_SECOND;
    return {
      busy: (user + nice + system + irq + softirq + steal) / t,
      interrupts: (irq + softirq) / t,
      steal: steal / t,
    };
  } catch {
    return { busy: Number.NaN, interrupts: Number.NaN, steal: Number.NaN };
  }
}

export interface CpuSnapshot {
  at: number;
  self: number;
  /** CPU seconds by role, per pid (a pid that ends between two snapshots is left out of the delta). */
  pids: Record<string, Record<number, number>>;
  machine: ReturnType<typeof machineCpuSeconds>;
}

/** CPU seconds now of this process, the given processes by role, and the whole machine. */
export function cpuSnapshot(pids: Record<string, Array<number | undefined>>): CpuSnapshot {
  const u = process.cpuUsage();
  const byRole: CpuSnapshot['pids'] = {};
  for (const [role, list] of Object.entries(pids)) {
    const m: Record<number, number> = {};
    for (const pid of list) if (pid !== undefined) m[pid] = processCpuSeconds(pid);
    byRole[role] = m;
  }
  return {
    at: performance.now(),
    self: (u.user + u.system) / 1e6,
    pids: byRole,
    machine: machineCpuSeconds(),
  };
}

/** The role of this process (the benchmark, which generates the load) in {@link coresUsed}. */
export const GENERATOR = 'bench (load generator)';

/** Cores used (CPU seconds per wall second) between two snapshots, by role. */
export function coresUsed(a: CpuSnapshot, b: CpuSnapshot): Record<string, number> {
  const wall = (b.at - a.at) / 1000;
  const out: Record<string, number> = { [GENERATOR]: (b.self - a.self) / wall };
  for (const [role, m] of Object.entries(b.pids)) {
    let sum = 0;
    for (const [pid, v] of Object.entries(m)) {
      const before = a.pids[role]?.[Number(pid)];
      if (before !== undefined && Number.isFinite(before) && Number.isFinite(v)) sum += v - before;
    }
    out[role] = sum / wall;
  }
  out.machine = (b.machine.busy - a.machine.busy) / wall;
  out['irq+steal'] = (b.machine.interrupts - a.machine.interrupts + b.machine.steal - a.machine.steal) / wall;
  return out;
}
