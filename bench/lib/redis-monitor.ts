// Which Redis commands the service sends, by owner: a MONITOR sample counts every command (those run
// inside Lua scripts included) and those touching BullMQ's keys, which INFO commandstats cannot split.
import type { Redis } from 'ioredis';

export interface CommandSample {
  /** Every command the server ran during the sample (scripts' inner calls included). */
  total: number;
  /** Commands with a `bull:` key among their arguments (BullMQ's queue). */
  bull: number;
}

/** Samples for `ms` milliseconds. MONITOR slows the server: use it on a run whose speed is not reported. */
export async function sampleCommands(redis: Redis, ms: number): Promise<CommandSample> {
  const monitor = await redis.monitor();
  const sample: CommandSample = { total: 0, bull: 0 };
  monitor.on('monitor', (_time: string, args: string[]) => {
    sample.total += 1;
    if (args.some((a) => a.startsWith('bull:'))) sample.bull += 1;
  });
  await new Promise((resolve) => setTimeout(resolve, ms));
  monitor.disconnect();
  return sample;
}
