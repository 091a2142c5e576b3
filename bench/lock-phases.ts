// The contended phases bench/locks.ts and bench/lock-backends.ts share: 50 contenders spread over N
// child processes (bench/lock-contender.ts), each with its own lock client, loop acquire → INCR →
// release on one lock for a window; the INCR value is the true global order of acquisitions, so
// hand-offs are counted exactly whatever the lock. aggregate() turns the children's records into one
// result per library and configuration.
import type { Redis } from 'ioredis';
import { envNumber, repoRoot } from './lib/output.ts';
import { type CommandCounts, commandStats, diffCommandStats, serverCpuSeconds } from './lib/redis-info.ts';
import { addCounts, ratio, type Summary, summarize, sumValues } from './lib/stats.ts';
import { sleepUntil, spawnWorkers, type Worker } from './lib/workers.ts';
import { LIB_LABELS, type LibName, type LockServers } from './lock-adapters.ts';
import type { ChildMessage, ContenderStats, ParentMessage, ResultMessage } from './lock-protocol.ts';

/** BENCH_CONTENDERS (default 50): a multiple of 10, so that every process count gets an equal share. */
export const CONTENDERS = contenderCount();

function contenderCount(): number {
  const n = envNumber('BENCH_CONTENDERS', 50);
  if (n % 10 !== 0) throw new Error(`BENCH_CONTENDERS must be a multiple of 10, got ${n}`);
  return n;
}
export const PROCESS_COUNTS = [2, 10] as const;
const LOCK_NAME = 'bench-lock';
/** Children stop contending at the deadline; in-flight acquisitions get this long to finish. */
export const DRAIN_MS = 15_000;
const START_DELAY_MS = 250;

export type ContenderWorker = Worker<ParentMessage, ChildMessage>;

export interface PhaseResult {
  lib: LibName;
  label: string;
  settings: Record<string, unknown>;
  /** Windows measured (BENCH_ROUNDS), interleaved with the other libraries'; totals cover all of them. */
  rounds: number;
  processes: number;
  pauseMs: number;
  windowMs: number;
  acquisitions: number;
  acquisitionsPerSec: number;
  handoffs: number;
  handoffsPerSec: number;
  /** Pairs of consecutive records whose INCR values were not adjacent (window edges only). */
  sequenceGaps: number;
  latencyMs: Summary;
  /** Per acquisition: from wanting the lock to holding it, failed attempts included. */
  waitMs: Summary;
  /** From the previous holder calling release to the next holder's acquire returning, per hand-off. */
  handoffGapMs: Summary;
  /** The same, split by whether the next holder runs in the releaser's process or in another one. */
  handoffGapSameProcessMs: Summary;
  handoffGapOtherProcessMs: Summary;
  /** Critical section: acquire returned → release called (the benchmark's INCR round trip). */
  holdMs: Summary;
  maxWaitMs: number;
  /** Contenders that did not get the lock once during a whole window. */
  neverAcquired: number;
  gaveUp: number;
  errors: number;
  overlaps: number;
  clientCommands: CommandCounts;
  clientCommandsPerAcquisition: number;
  /** INFO commandstats delta over the window, the benchmark's bookkeeping subtracted per command. */
  serverCommands: CommandCounts;
  serverCommandsPerAcquisition: number;
  bookkeepingCommands: CommandCounts;
  /** CPU used inside the window, in % of one core: redis-server, and all contender processes together. */
  serverCpuPercent: number;
  clientCpuPercent: number;
  /**
   * Requests the lock's server received per acquisition: Redis commands the clients sent (a script
   * call is one), etcd gRPC messages, ZooKeeper packets.
   */
  lockRequestsPerAcquisition: number;
  drainMs: number;
  drainTimedOut: boolean;
  errorSamples: string[];
}

export async function startWorkers(processes: number): Promise<ContenderWorker[]> {
  const workers = spawnWorkers<ParentMessage, ChildMessage>(
    new URL('./lock-contender.ts', import.meta.url),
    processes,
    { cwd: repoRoot, fatal: (m) => (m.type === 'fatal' ? m.message : undefined) },
  );
  try {
    await Promise.all(workers.map((w) => w.next('hello', 60_000)));
  } catch (err) {
    await Promise.all(workers.map((w) => w.stop()));
    throw err;
  }
  return workers;
}

function expect<T extends ChildMessage['type']>(
  workers: ContenderWorker[],
  type: T,
  timeoutMs: number,
): Promise<Extract<ChildMessage, { type: T }>[]> {
  return Promise.all(workers.map((w) => w.next(type, timeoutMs)));
}

export async function runPhase(
  workers: ContenderWorker[],
  admin: Redis,
  url: string,
  lib: LibName,
  processes: number,
  pauseMs: number,
  seconds: number,
  /** etcd and ZooKeeper: where the lock clients connect, and the requests that server has received. */
  lockServer?: { servers: LockServers; requests(): Promise<number> },
): Promise<Round> {
  await admin.flushall();
  const perProcess = CONTENDERS / processes;
  workers.forEach((w, i) => {
    const contenders = Array.from({ length: perProcess }, (_, k) => i * perProcess + k);
    w.send({
      type: 'setup',
      lib,
      url,
      lockName: LOCK_NAME,
      pauseMs,
      contenders,
      servers: lockServer?.servers,
    });
  });
  const ready = await expect(workers, 'ready', 60_000);

  const windowMs = Math.round(seconds * 1_000);
  const startAt = Date.now() + START_DELAY_MS;
  const deadline = startAt + windowMs;
  for (const w of workers) w.send({ type: 'go', startAt, deadline, drainMs: DRAIN_MS });
  const resultsPromise = expect(workers, 'result', START_DELAY_MS + windowMs + DRAIN_MS + 20_000);
  resultsPromise.catch(() => {}); // awaited below; avoid an unhandled rejection while we sample stats
  await sleepUntil(startAt);
  const before = await commandStats(admin);
  const cpuBefore = await serverCpuSeconds(admin);
  const lockRequestsBefore = await lockServer?.requests();
  await sleepUntil(deadline);
  const lockRequestsAfter = await lockServer?.requests();
  const after = await commandStats(admin);
  const serverCpuMs = ((await serverCpuSeconds(admin)) - cpuBefore) * 1_000;
  const results = await resultsPromise;
  for (const w of workers) w.send({ type: 'teardown' });
  await expect(workers, 'closed', 30_000);

  return {
    windowMs,
    settings: ready[0]?.settings ?? {},
    results,
    serverCommands: diffCommandStats(before, after),
    serverCpuMs,
    lockServerRequests:
      lockRequestsAfter === undefined ? undefined : lockRequestsAfter - (lockRequestsBefore ?? 0),
  };
}

/** One measured window of one library: what the children reported and what the server counted. */
export interface Round {
  windowMs: number;
  settings: Record<string, unknown>;
  results: ResultMessage[];
  /** INFO commandstats delta over the window (the parent's INFO excluded). */
  serverCommands: CommandCounts;
  serverCpuMs: number;
  /** etcd gRPC messages or ZooKeeper packets received over the window (pings and keep-alives included). */
  lockServerRequests: number | undefined;
}

export function aggregate(lib: LibName, processes: number, pauseMs: number, rounds: Round[]): PhaseResult {
  const results = rounds.flatMap((r) => r.results);
  const seq = results.flatMap((r) => r.seq);
  const who = results.flatMap((r) => r.who);
  const latency = results.flatMap((r) => r.latencyMs);
  const waits = results.flatMap((r) => r.waitMs);
  const acquiredAt = results.flatMap((r) => r.acquiredAt);
  const releasedAt = results.flatMap((r) => r.releasedAt);
  const clientCommands = results.reduce<CommandCounts>((acc, r) => addCounts(acc, r.clientCommands), {});
  const bookkeeping = results.reduce<CommandCounts>((acc, r) => addCounts(acc, r.bookkeepingCommands), {});
  const windowMs = rounds.reduce((n, r) => n + r.windowMs, 0);

  // Per contender over all rounds; starved = got nothing in at least one whole window.
  const contenders = new Map<number, ContenderStats & { starved: boolean }>();
  for (const c of results.flatMap((r) => r.contenders)) {
    const m = contenders.get(c.id) ?? {
      ...c,
      acquisitions: 0,
      gaveUp: 0,
      errors: 0,
      maxWaitMs: 0,
      starved: false,
    };
    m.acquisitions += c.acquisitions;
    m.gaveUp += c.gaveUp;
    m.errors += c.errors;
    m.maxWaitMs = Math.max(m.maxWaitMs, c.maxWaitMs);
    m.starved ||= c.acquisitions === 0;
    contenders.set(c.id, m);
  }

  let handoffs = 0;
  let sequenceGaps = 0;
  const handoffGaps: number[] = [];
  const gapsSame: number[] = [];
  const gapsOther: number[] = [];
  const perProcess = CONTENDERS / processes;
  const holds = acquiredAt.map((t, i) => (releasedAt[i] as number) - t);
  // The INCR value taken inside the critical section is the true global order of acquisitions; it
  // restarts every round (the database is flushed), so each round's records are ordered on their own.
  let offset = 0;
  for (const round of rounds) {
    const count = round.results.reduce((n, r) => n + r.seq.length, 0);
    const order = Array.from({ length: count }, (_, i) => offset + i).sort(
      (a, b) => (seq[a] as number) - (seq[b] as number),
    );
    offset += count;
    for (let i = 1; i < order.length; i++) {
      const prev = order[i - 1] as number;
      const cur = order[i] as number;
      if (seq[cur] !== (seq[prev] as number) + 1) {
        sequenceGaps += 1;
        continue;
      }
      if (who[cur] !== who[prev]) {
        handoffs += 1;
        const gap = (acquiredAt[cur] as number) - (releasedAt[prev] as number);
        handoffGaps.push(gap);
        const sameProcess =
          Math.floor((who[cur] as number) / perProcess) === Math.floor((who[prev] as number) / perProcess);
        (sameProcess ? gapsSame : gapsOther).push(gap);
      }
    }
  }

  const serverCommands = rounds.reduce<CommandCounts>((acc, r) => addCounts(acc, r.serverCommands), {});
  for (const [cmd, n] of Object.entries(bookkeeping)) {
    serverCommands[cmd] = (serverCommands[cmd] ?? 0) - n;
    if (serverCommands[cmd] === 0) delete serverCommands[cmd];
  }

  const acquisitions = seq.length;
  const seconds = windowMs / 1_000;
  return {
    lib,
    label: LIB_LABELS[lib],
    settings: rounds[0]?.settings ?? {},
    rounds: rounds.length,
    processes,
    pauseMs,
    windowMs,
    acquisitions,
    acquisitionsPerSec: acquisitions / seconds,
    handoffs,
    handoffsPerSec: handoffs / seconds,
    sequenceGaps,
    latencyMs: summarize(latency),
    waitMs: summarize(waits),
    handoffGapMs: summarize(handoffGaps),
    handoffGapSameProcessMs: summarize(gapsSame),
    handoffGapOtherProcessMs: summarize(gapsOther),
    holdMs: summarize(holds),
    maxWaitMs: Math.max(0, ...[...contenders.values()].map((c) => c.maxWaitMs)),
    neverAcquired: [...contenders.values()].filter((c) => c.starved).length,
    gaveUp: [...contenders.values()].reduce((n, c) => n + c.gaveUp, 0),
    errors: [...contenders.values()].reduce((n, c) => n + c.errors, 0),
    overlaps: results.reduce((n, r) => n + r.overlaps, 0),
    clientCommands,
    clientCommandsPerAcquisition: ratio(sumValues(clientCommands), acquisitions),
    serverCommands,
    serverCommandsPerAcquisition: ratio(sumValues(serverCommands), acquisitions),
    bookkeepingCommands: bookkeeping,
    serverCpuPercent: (100 * rounds.reduce((n, r) => n + r.serverCpuMs, 0)) / windowMs,
    lockRequestsPerAcquisition: rounds.every((r) => r.lockServerRequests !== undefined)
      ? ratio(
          rounds.reduce((n, r) => n + (r.lockServerRequests ?? 0), 0),
          acquisitions,
        )
      : ratio(sumValues(clientCommands), acquisitions),
    clientCpuPercent: (100 * results.reduce((n, r) => n + r.cpuMs, 0)) / windowMs,
    drainMs: Math.max(...results.map((r) => r.drainMs)),
    drainTimedOut: results.some((r) => r.drainTimedOut),
    errorSamples: [...new Set(results.flatMap((r) => r.errorSamples))].slice(0, 5),
  };
}
