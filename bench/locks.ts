// Lock benchmark (`npm run bench:locks`): 50 contenders on one lock, each with its own connection,
// spread over 2 and then 10 OS processes, loop acquire → INCR → release for a fixed time, with no
// pause and with a 2 ms pause after release. This library (its default starvationMs, and 0: the strict
// hand-off), redlock (defaults and tuned) and redis-semaphore take turns in interleaved rounds against
// one private redis-server; each table prints medians with their range (bench/lock-report.ts). First
// the uncontended acquire+release against a raw SET NX PX + compare-and-delete pair and the ceilings
// (bench/lock-uncontended.ts). Last, the lock family
// (bench/lock-family.ts: fair lock and RedLock over 3 masters, in this process, on private servers of
// their own) and the etcd and ZooKeeper backends against their peers (bench/lock-backends.ts).
// Results also go to .bench/locks.json (and .bench/lock-family.json, .bench/lock-backends.json).
// Exit code 1 only when this library (any variant) overlapped or a child crashed.
//
// Environment: BENCH_SECONDS (window per library, configuration and round, default 2), BENCH_ROUNDS
// (windows per library, taking turns with the others, default 3: the tables print medians and ranges),
// BENCH_WARMUP_SECONDS (unmeasured run of each library in fresh processes, default 1),
// BENCH_UNCONTENDED_ITERATIONS (default 5000, after 2000 unmeasured of each variant), BENCH_ONLY=contended
// (skip the lock family and the backends), BENCH_CONTENDERS (contenders of the contended runs and the
// backends, default 50, a multiple of 10), BENCH_STARVATION_MS (this library's starvationMs, default
// its own), BENCH_LIBS (a comma list of the libraries to run, default all). The lock family uses the same BENCH_SECONDS per variant.
import os from 'node:os';
import type { Redis } from 'ioredis';
import { RedisServer } from '../harness/redis-server.ts';
import { environment, envNumber, repoRoot, writeJson } from './lib/output.ts';
import { redisVersion } from './lib/redis-info.ts';
import { type Check, ms, num, printChecks } from './lib/table.ts';
import { WorkerCrashedError } from './lib/workers.ts';
import { LIBS, type LibName } from './lock-adapters.ts';
import { countOurOverlaps, runLockBackendsBench } from './lock-backends.ts';
import { runLockFamilyBench } from './lock-family.ts';
import {
  aggregate,
  CONTENDERS,
  type ContenderWorker,
  type PhaseResult,
  PROCESS_COUNTS,
  type Round,
  runPhase,
  startWorkers,
} from './lock-phases.ts';
import {
  type Ceilings,
  type ConfigurationReport,
  evaluate,
  libReports,
  printConfiguration,
  printLegend,
  TARGETS,
} from './lock-report.ts';
import { measureRedisCommandsPerSec, roundTripMs, runUncontended } from './lock-uncontended.ts';

const SECONDS = envNumber('BENCH_SECONDS', 2);
/** Windows per library and configuration, the libraries taking turns (evens out a noisy host). */
const ROUNDS = Math.round(envNumber('BENCH_ROUNDS', 3));
/** Unmeasured run of every library after the processes start, so no library meets a cold JIT. */
const WARMUP_SECONDS = envNumber('BENCH_WARMUP_SECONDS', 1);
const UNCONTENDED_ITERATIONS = Math.round(envNumber('BENCH_UNCONTENDED_ITERATIONS', 5_000));
const CONTENDED_ONLY = process.env.BENCH_ONLY === 'contended';
const PAUSES_MS = [0, 2] as const;
/** BENCH_LIBS=a,b: only these libraries (default all), e.g. this library's variants alone. */
const RUN_LIBS = selectedLibs(process.env.BENCH_LIBS);

function selectedLibs(list: string | undefined): readonly LibName[] {
  if (!list) return LIBS;
  const names = list.split(',').map((n) => n.trim());
  const unknown = names.filter((n) => !(LIBS as readonly string[]).includes(n));
  if (unknown.length)
    throw new Error(`BENCH_LIBS: unknown ${unknown.join(', ')} (known: ${LIBS.join(', ')})`);
  return LIBS.filter((l) => names.includes(l));
}

async function main(): Promise<number> {
  const server = await RedisServer.start();
  const admin = server.client();
  const pool: { workers: ContenderWorker[] } = { workers: [] };
  const cleanup = async () => {
    await Promise.all(pool.workers.map((w) => w.stop()));
    pool.workers = [];
    await server.stop();
  };
  const onSignal = (signal: NodeJS.Signals) => {
    console.error(`\n${signal}: stopping children and redis-server`);
    cleanup().finally(() => process.exit(130));
  };
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);
  try {
    return await runAll(server.url, admin, pool);
  } finally {
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
    await cleanup();
  }
}

async function runAll(url: string, admin: Redis, pool: { workers: ContenderWorker[] }): Promise<number> {
  const env = environment({
    redis: await redisVersion(admin),
    seconds: SECONDS,
    rounds: ROUNDS,
    contenders: CONTENDERS,
    loadAverage: os.loadavg(),
  });
  console.log(
    `lock benchmark — ${CONTENDERS} contenders, ${ROUNDS} × ${SECONDS} s per library and configuration, redis ${env.redis}, ` +
      `node ${env.node}, ${env.cpus} CPU (${env.cpuModel}), load average ${os
        .loadavg()
        .map((l) => l.toFixed(2))
        .join(' ')}`,
  );
  const uncontended = await runUncontended(url, UNCONTENDED_ITERATIONS, TARGETS.uncontendedRatio);
  const ceilings: Ceilings = {
    redisCommandsPerSec: await measureRedisCommandsPerSec(admin),
    roundTripMs: await roundTripMs(url),
  };
  console.log(
    `\nredis-server on this machine: ${num(ceilings.redisCommandsPerSec)} commands/s (pipelined INCR, 1 s); ` +
      `idle round trip p50 ${ms(ceilings.roundTripMs)} ms (PING)`,
  );
  printLegend();
  const configurations = await runContended(url, admin, pool, ceilings);
  const rest = CONTENDED_ONLY ? undefined : await runFamilyAndBackends();
  const allChecks = [
    ...configurations.flatMap((c) => c.checks),
    ...uncontended.checks,
    ...(rest?.checks ?? []),
  ];
  printChecks('Targets (informational; exit code depends only on overlaps and crashes)', allChecks);
  const file = writeJson('locks', {
    environment: env,
    targets: TARGETS,
    ceilings,
    configurations: configurations.map((c) => ({
      ...c,
      libs: c.libs.map(({ pooled, ...l }) => ({ ...l, ...pooled })),
    })),
    uncontended,
    family: rest?.family,
    checks: allChecks,
  });
  console.log(`\nresults written to ${file.replace(`${repoRoot}/`, '')}`);
  const ourOverlaps = configurations
    .flatMap((c) => c.libs)
    .filter((l) => l.pooled.lib.startsWith('flashsale'))
    .reduce((n, l) => n + l.pooled.overlaps, 0);
  const overlaps = ourOverlaps + (rest?.overlaps ?? 0);
  if (overlaps > 0) {
    console.error(
      `FAIL: ${overlaps} overlapping critical sections with this library (${rest?.overlaps ?? 0} in the lock family or on etcd/ZooKeeper)`,
    );
    return 1;
  }
  return 0;
}

/** Every process count and pause: ROUNDS interleaved windows of every library, each setting printed. */
async function runContended(
  url: string,
  admin: Redis,
  pool: { workers: ContenderWorker[] },
  ceilings: Ceilings,
): Promise<ConfigurationReport[]> {
  const configurations: ConfigurationReport[] = [];
  for (const processes of PROCESS_COUNTS) {
    pool.workers = await startWorkers(processes);
    process.stdout.write(`  warming up ${processes} processes (${WARMUP_SECONDS} s per library) ...`);
    for (const lib of RUN_LIBS) await runPhase(pool.workers, admin, url, lib, processes, 0, WARMUP_SECONDS);
    console.log(' done');
    for (const pauseMs of PAUSES_MS) {
      const report = await runConfiguration(pool.workers, admin, url, processes, pauseMs);
      printConfiguration(report, ceilings, SECONDS);
      configurations.push(report);
    }
    await Promise.all(pool.workers.map((w) => w.stop()));
    pool.workers = [];
  }
  return configurations;
}

/** One setting: ROUNDS interleaved windows of every library, reported by median and range. */
async function runConfiguration(
  workers: ContenderWorker[],
  admin: Redis,
  url: string,
  processes: number,
  pauseMs: number,
): Promise<ConfigurationReport> {
  const rounds = new Map<LibName, Round[]>(RUN_LIBS.map((lib) => [lib, []]));
  const perRound: PhaseResult[][] = [];
  for (let round = 1; round <= ROUNDS; round++) {
    const row: PhaseResult[] = [];
    for (const lib of RUN_LIBS) {
      const tag = ROUNDS > 1 ? ` (round ${round}/${ROUNDS})` : '';
      process.stdout.write(`  running ${processes} processes, pause ${pauseMs} ms, ${lib}${tag} ... `);
      const r = await runPhase(workers, admin, url, lib, processes, pauseMs, SECONDS);
      rounds.get(lib)?.push(r);
      const one = aggregate(lib, processes, pauseMs, [r]);
      row.push(one);
      console.log(`${num(one.handoffsPerSec)} hand-offs/s, wait p99 ${ms(one.waitMs.p99)} ms`);
    }
    perRound.push(row);
  }
  const pooled = RUN_LIBS.map((lib) => aggregate(lib, processes, pauseMs, rounds.get(lib) ?? []));
  return evaluate(processes, pauseMs, ROUNDS, libReports(perRound, pooled));
}

/** The lock family and the backends, on private servers of their own; their checks join the summary. */
async function runFamilyAndBackends(): Promise<{ checks: Check[]; overlaps: number; family: unknown }> {
  console.log('\nlock family (fair, RedLock(3)) against redlock and redis-semaphore:');
  const family = await runLockFamilyBench({ seconds: SECONDS });
  const checks = family.checks.map((c) => ({ ...c, name: `family: ${c.name}` }));
  const backends = await runLockBackendsBench();
  // The family's own variants (plain, fair, RedLock(3)) are this library too.
  const familyOverlaps = family.results
    .filter((r) => ['plain', 'fair', 'redlock3'].includes(r.variant))
    .reduce((n, r) => n + r.overlaps, 0);
  return {
    checks,
    overlaps: familyOverlaps + countOurOverlaps(backends.contended),
    family: { seconds: family.seconds, ratios: family.ratios, checks: family.checks },
  };
}

main().then(
  (code) => process.exit(code),
  (err) => {
    console.error(err instanceof WorkerCrashedError ? err.message : err);
    process.exit(1);
  },
);
