// Phase 2a: Redis commands per accepted order, the real path from 8 shards under a 2 s MONITOR
// sample; a step of the suite, and BENCH_ONLY=commands alone (API + writer, warm-up, the sample).
import { setTimeout as sleep } from 'node:timers/promises';
import { startMonitor } from '../lib/redis-monitor.ts';
import { type Check, num, printChecks } from '../lib/table.ts';
import type { BenchRun } from './bench-run.ts';
import { BIG_STOCK, TARGETS } from './options.ts';
import type { Phase } from './phase.ts';
import { realPath, warmUp } from './rounds.ts';
import { runScenario, type ScenarioResult } from './scenario.ts';

/** Commands in total and on BullMQ's keys over the orders accepted meanwhile, or why there are none. */
export type CommandSample = { total: number; bull: number; orders: number } | { failed: string };

/**
 * Counts API, writer and sweeper commands (scripts' inner calls included) per order accepted during
 * the sample. MONITOR slows Redis, so this run's speed is not compared with anything.
 * bench/lib/redis-monitor.ts says why the sample reads MONITOR from a raw socket and not from ioredis.
 */
export async function sampleCommands(
  bench: BenchRun,
  url: string,
): Promise<{ sample: CommandSample; result: ScenarioResult }> {
  bench.log('phase 2a: Redis commands per accepted order (c8 under a 2 s MONITOR sample)');
  let sample: CommandSample = { failed: 'the sample did not run' };
  let lost: Error | undefined;
  const result = await runScenario(bench, {
    ...realPath('c8m', 'real path, 8 shards, under MONITOR', [url], 'bench-c8m'),
    during: async (load) => {
      // Past the ramp-up (the sample window is the thing measured), so the writer keeps pace.
      await sleep(1000);
      try {
        const monitor = await startMonitor(bench.infra.redis.port, (err) => {
          lost = err;
        });
        const before = load.progress.accepted;
        await sleep(2000);
        sample = { ...monitor.stop(), orders: load.progress.accepted - before };
      } catch (err) {
        sample = { failed: (lost ?? (err as Error)).message };
        bench.log(`         ${sample.failed}`);
      }
    },
  });
  return { sample, result };
}

/** The sample against its targets: at most so many Redis commands per accepted order. */
export function commandChecks(sample: CommandSample | undefined): Check[] {
  if (!sample) return [];
  const name = 'Redis commands per accepted order (c8m)';
  if ('failed' in sample) return [{ name, pass: false, detail: sample.failed }];
  const { total, bull, orders } = sample;
  if (orders === 0) return [];
  const at = (name: string, count: number, target: number): Check => ({
    name: `${name} <= ${target}`,
    pass: count / orders <= target,
    detail: `${num(count / orders, 1)}  ${count} / ${orders} orders`,
  });
  return [
    at(name, total, TARGETS.commandsPerOrder),
    at('  of which BullMQ (bull:* keys)', bull, TARGETS.bullPerOrder),
  ];
}

export const commandsPhase: Phase = {
  name: 'commands',
  inFullRun: false, // the suite takes the sample in its phase 2
  async run(bench) {
    const worker = await bench.spawn('worker');
    const api = await bench.spawn('api');
    for (const id of ['bench-warm2', 'bench-c8m']) await bench.createSale(api.url, id, BIG_STOCK, 8);
    await warmUp(bench, [api.url], 'bench-warm2', ['/api/orders'], 'rows');
    const { sample } = await sampleCommands(bench, api.url);
    await bench.stop(api);
    await bench.stop(worker);
    return {
      report() {
        const checks = commandChecks(sample);
        printChecks('Phase 2a: Redis commands per accepted order', checks);
        return { checks };
      },
    };
  },
};
