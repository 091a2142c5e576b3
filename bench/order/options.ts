// The settings of `npm run bench`, read from the environment once into one typed value, and the
// stock sizes and targets the order bench judges its scenarios by.
import { envNumber } from '../lib/output.ts';

export interface BenchOptions {
  /** BENCH_SECONDS: window per scenario (default 5). */
  seconds: number;
  /** BENCH_CONNECTIONS: autocannon connections (default 100). */
  connections: number;
  /** BENCH_WARMUP_SECONDS: warm-up load before a phase's scenarios (default 1). */
  warmupSeconds: number;
  /** BENCH_REPEATS: interleaved rounds of the repeated scenarios, reported by their median (default 3). */
  repeats: number;
  /** BENCH_TOPOLOGY: `split` (API + writer process, the default) or `main` (one process). */
  topology: 'split' | 'main';
  /** BENCH_ONLY: the one phase to run (see the phase table in bench/orders.ts); undefined runs them all. */
  only: string | undefined;
  /** BENCH_PROFILE=1: c8 under --cpu-prof instead of the phases (bench/order/phase-profile.ts). */
  profile: boolean;
  /** BENCH_REDIS=cluster: the Redis Cluster comparison instead of the phases (bench/order/cluster.ts). */
  cluster: boolean;
  overload: { seconds: number; connections: number; workers: number[]; timeoutMs: number };
  reshard: { seconds: number; firstMs: number; everyMs: number; cycles: number[][] };
  herd: HerdOptions;
}

export interface HerdOptions {
  /** BENCH_HERD_CAPACITY_SECONDS: the closed-model capacity run before the herd (default 5). */
  capacitySeconds: number;
  /** BENCH_HERD_CONNECTIONS: the buyers' undici pool (default 400). */
  connections: number;
}

export function readOptions(): BenchOptions {
  const seconds = envNumber('BENCH_SECONDS', 5);
  return {
    seconds,
    connections: Math.round(envNumber('BENCH_CONNECTIONS', 100)),
    warmupSeconds: envNumber('BENCH_WARMUP_SECONDS', 1),
    repeats: Math.max(1, Math.round(envNumber('BENCH_REPEATS', 3))),
    topology: process.env.BENCH_TOPOLOGY === 'main' ? 'main' : 'split',
    only: process.env.BENCH_ONLY || undefined,
    profile: process.env.BENCH_PROFILE === '1',
    cluster: process.env.BENCH_REDIS === 'cluster',
    overload: {
      seconds: envNumber('BENCH_OVERLOAD_SECONDS', 10),
      // The open-model crowd's sockets per API URL, and how long it waits for an answer.
      connections: envNumber('BENCH_OVERLOAD_CONNECTIONS', 400),
      workers: (process.env.BENCH_OVERLOAD_WORKERS ?? '1,2').split(',').map(Number),
      timeoutMs: 15_000,
    },
    reshard: {
      // At least 7 s by default so that each c8rs slice holds 3 reshards; never below 5 (2 reshards).
      seconds: Math.max(5, envNumber('BENCH_RESHARD_SECONDS', Math.max(7, seconds))),
      firstMs: 1_000,
      everyMs: 2_000,
      // Shard counts each c8rs slice moves through from 8, in turn: up and down, by different steps.
      cycles: [
        [12, 6, 16, 8],
        [16, 8, 12, 6],
      ],
    },
    herd: {
      capacitySeconds: envNumber('BENCH_HERD_CAPACITY_SECONDS', 5),
      connections: envNumber('BENCH_HERD_CONNECTIONS', 400),
    },
  };
}

/** Never sold out during a run. */
export const BIG_STOCK = 10_000_000;
export const SOLD_OUT_STOCK = 2_000;

export const TARGETS = {
  lockCost: 0.9, // c8 / b+enq (and c8 / b, reported against the same bar)
  commandsPerOrder: 20, // Redis commands per accepted order, at most (MONITOR sample during c8)
  bullPerOrder: 5, // of which on BullMQ's keys, at most
  soldOut: 0.95, // d / a
  fullPath: 0.67, // c8 / a: API CPU per accepted order at most 1.5x the bare 202
  writer: 1.0, // writer rows/s / accepted/s during c
  reshard: 0.8, // c8rs / c8s orders/s
  reshardCount: 3, // reshards inside the c8rs windows
  dashboard: 0.95, // c8p / c8w orders/s: a watched dashboard costs the hot path under 5 %
};
