// Order-path benchmark (`npm run bench`): the table of its phases, which bench/order/runner.ts runs
// on one private infrastructure (redis-server, a fresh Postgres database) and reports together.
//
// Each phase is a module of bench/order/ exporting a `Phase` (bench/order/phase.ts): adding one is a
// line below. Without BENCH_ONLY a run takes every phase marked inFullRun, in this order:
//   core          a b c8 d on warmed processes, interleaved rounds, and the cheap answers: the c8/a,
//                 c8/b and d/a targets are judged on its medians (bench/order/core-run.ts)
//   suite         a (POST /bench/bare, the HTTP ceiling), b (/bench/unlocked: one lock-free Lua
//                 decrement), then with the writer b+enq (the same + the BullMQ enqueue), c1/c8 (the
//                 real path, 1 and 8 shards), c8m (Redis commands per order under MONITOR), c8s/c8rs
//                 (live reshard), c8w/c8p (dashboard polled), d (sold-out fast path), c1x2/c8x2 (two
//                 API processes) (bench/order/suite.ts)
//   overload      for API_WORKERS=1 and 2: capacity (closed model), then an open-model crowd at 2x
//                 and 4x it (bench/order/phase-overload.ts)
//   lock-backends c8 with LOCK_BACKEND=redis, etcd and zookeeper side by side
//   herd          a sale with more buyers than capacity: streaming buyers, polling buyers, and
//                 WAITING_ROOM=off (bench/order/herd.ts)
//   streams       what a held buyer costs the API in memory and CPU (bench/order/phase-streams.ts)
// and on demand: BENCH_ONLY=commands (the MONITOR sample alone), BENCH_PROFILE=1 (c8 with the API
// under --cpu-prof; BENCH_PROFILE_ROOT, _SOLD_OUT, _QUEUED, _PATH: bench/order/phase-profile.ts) and
// BENCH_REDIS=cluster (one redis-server against a 3+3 Redis Cluster: bench/order/cluster.ts).
// The writer runs as its own process (`worker`) beside the API; BENCH_TOPOLOGY=main runs `main`
// (API + writer in one process). After every run that takes orders: the writer drains, then rows ==
// accepted, sold == accepted, available + sold == total; exit 1 on any violation. Results go to
// .bench/orders.json and a chart of orders/s and p99 per scenario to .bench/orders.svg.
// Settings (bench/order/options.ts): BENCH_SECONDS (5), BENCH_CONNECTIONS (100), BENCH_WARMUP_SECONDS
// (1), BENCH_REPEATS (3), BENCH_OVERLOAD_SECONDS (10), BENCH_OVERLOAD_CONNECTIONS (400),
// BENCH_OVERLOAD_WORKERS (1,2), BENCH_RESHARD_SECONDS (BENCH_SECONDS but at least 7, never below 5);
// the core phase's BENCH_CORE=0 / BENCH_CHEAP=0, the herd's BENCH_HERD_CAPACITY_SECONDS / _CONNECTIONS.
import { log } from './order/bench-run.ts';
import { clusterBench } from './order/cluster.ts';
import { readOptions } from './order/options.ts';
import type { Phase } from './order/phase.ts';
import { commandsPhase } from './order/phase-commands.ts';
import { corePhase } from './order/phase-core.ts';
import { herdPhase } from './order/phase-herd.ts';
import { lockBackendsPhase } from './order/phase-lock-backends.ts';
import { overloadPhase } from './order/phase-overload.ts';
import { profilePhase } from './order/phase-profile.ts';
import { streamsPhase } from './order/phase-streams.ts';
import { runPhases } from './order/runner.ts';
import { suitePhase } from './order/suite.ts';

const PHASES: Phase[] = [
  corePhase,
  suitePhase,
  commandsPhase,
  overloadPhase,
  lockBackendsPhase,
  herdPhase,
  streamsPhase,
  profilePhase,
];

async function main(): Promise<number> {
  const o = readOptions();
  if (!o.cluster) return runPhases(PHASES, o);
  const { seconds, connections, warmupSeconds } = o;
  const found = await clusterBench({ seconds, connections, warmupSeconds, log });
  for (const v of found) console.log(`  VIOLATION [${v.scenario}] ${v.check}: ${v.detail}`);
  return found.length > 0 ? 1 : 0;
}

main().then(
  (code) => process.exit(code),
  (err: unknown) => {
    console.error(err);
    process.exit(1);
  },
);
