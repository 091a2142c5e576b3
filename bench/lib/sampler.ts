// A value sampled on a fixed interval beside a load until stopped (the writer's progress, the
// service's admission limit): one loop, its samples handed back by stop().
import { setTimeout as sleep } from 'node:timers/promises';

/** Calls `take` every `intervalMs` (after it returns) until stop(); keeps what it returns, unless undefined. */
export function sampleEvery<T>(
  intervalMs: number,
  take: () => Promise<T | undefined>,
): { stop(): Promise<T[]> } {
  const samples: T[] = [];
  let stopped = false;
  const loop = (async () => {
    while (!stopped) {
      const v = await take();
      if (v !== undefined) samples.push(v);
      await sleep(intervalMs);
    }
  })();
  return {
    async stop() {
      stopped = true;
      await loop;
      return samples;
    },
  };
}
