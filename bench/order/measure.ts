// One measured load against one process: its answers/s and the process's CPU per answer, read from
// /proc around the load (window and tail), so a noisy neighbour shows in the rate more than the CPU.
import os from 'node:os';
import { treeCpuSeconds } from './cpu.ts';
import { type LoadOptions, type LoadResult, startLoad } from './load.ts';

export interface Measured {
  /** Answers with the expected status per second of the window. */
  rate: number;
  /** CPU µs of the measured process per answer (window and tail, any status). */
  cpuUs: number;
  /** Share of the window's answers with another status than expected. */
  unexpectedShare: number;
  load1: number;
  result: LoadResult;
}

/** Runs `load` and charges the CPU `pid` used meanwhile to its answers. */
export async function measure(pid: number | undefined, load: LoadOptions): Promise<Measured> {
  const before = treeCpuSeconds(pid);
  const result = await startLoad(load).done;
  const cpu = treeCpuSeconds(pid) - before;
  const answers = result.realAnswered + result.tailAnswered;
  const inWindow = result.ok + result.unexpected;
  return {
    rate: result.okPerSecond,
    cpuUs: answers > 0 ? (cpu * 1e6) / answers : Number.NaN,
    unexpectedShare: inWindow > 0 ? result.unexpected / inWindow : Number.NaN,
    load1: os.loadavg()[0] ?? Number.NaN,
    result,
  };
}
