// Child process of bench/locks.ts: runs a share of the contenders, each with its own connection and
// its own lock client, loops acquire → INCR → release for the window, and reports every acquisition.
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import { Redis } from 'ioredis';
import { CommandCounter } from './lib/command-counter.ts';
import { sendToParent, sleepUntil } from './lib/workers.ts';
import { createAdapter, GaveUpError, type LockAdapter, type Release } from './lock-adapters.ts';
import {
  BOOKKEEPING_PREFIX,
  type ChildMessage,
  type ContenderStats,
  type GoMessage,
  INSIDE_KEY,
  type ParentMessage,
  type ResultMessage,
  SEQ_KEY,
  type SetupMessage,
} from './lock-protocol.ts';

const counter = new CommandCounter((cmd) => {
  const first = cmd.args[0];
  return typeof first === 'string' && first.startsWith(BOOKKEEPING_PREFIX);
}).install();

interface Contender {
  stats: ContenderStats;
  redis: Redis;
  adapter: LockAdapter;
  /** Aborted at the deadline: ends a wait in progress (for the locks that take a signal). */
  controller: AbortController;
}

interface Phase {
  setup: SetupMessage;
  contenders: Contender[];
  /** The contender loops of the current window; settled once every contender stopped. */
  loops?: Promise<unknown>;
  drained?: boolean;
}

interface Window {
  startAt: number;
  deadline: number;
  /** The deadline on this process's monotonic clock. */
  deadlinePerf: number;
  stopped: boolean;
  records: Pick<ResultMessage, 'seq' | 'who' | 'latencyMs' | 'waitMs' | 'acquiredAt' | 'releasedAt'>;
  overlaps: number;
  errorSamples: Set<string>;
}

let phase: Phase | undefined;

function send(message: ChildMessage): Promise<void> {
  return sendToParent(message);
}

/** Epoch ms with sub-millisecond precision, comparable across processes on one host. */
function epochNow(): number {
  return performance.timeOrigin + performance.now();
}

function noteError(w: Window, err: unknown): void {
  if (w.errorSamples.size < 5)
    w.errorSamples.add(err instanceof Error ? `${err.name}: ${err.message}` : String(err));
}

async function setUp(setup: SetupMessage): Promise<void> {
  if (phase) throw new Error('setup while a phase is still open');
  const contenders: Contender[] = [];
  phase = { setup, contenders };
  for (const id of setup.contenders) {
    const redis = new Redis(setup.url, { lazyConnect: true });
    redis.on('error', () => {});
    await redis.connect();
    contenders.push({
      redis,
      adapter: createAdapter(setup.lib, redis, setup.lockName, id, setup.servers),
      controller: new AbortController(),
      stats: { id, acquisitions: 0, gaveUp: 0, errors: 0, maxWaitMs: 0 },
    });
  }
  // Uncontended warm-up on private keys: connections up, scripts loaded, pub/sub subscribed.
  await Promise.all(contenders.map((c) => c.adapter.warmUp()));
  await send({ type: 'ready', settings: contenders[0]?.adapter.describe() ?? {} });
}

async function runContender(w: Window, c: Contender, pauseMs: number): Promise<void> {
  const { stats, redis, adapter, controller } = c;
  while (!w.stopped) {
    const waitStart = performance.now();
    let release: Release | undefined;
    let latency = 0;
    while (!w.stopped) {
      const t0 = performance.now();
      try {
        release = await adapter.acquire(controller.signal);
        latency = performance.now() - t0;
        break;
      } catch (err) {
        if (w.stopped) break; // aborted at the deadline, or gave up after it: not counted
        if (err instanceof GaveUpError) {
          stats.gaveUp += 1;
        } else {
          stats.errors += 1;
          noteError(w, err);
          await sleep(5);
        }
      }
    }
    const acquiredPerf = performance.now();
    if (!release) {
      stats.maxWaitMs = Math.max(stats.maxWaitMs, w.deadlinePerf - waitStart);
      return;
    }
    const acquiredAt = epochNow();
    // Critical section: both INCRs leave in one write, so they cost one round trip.
    const [inside, seq] = await Promise.all([redis.incr(INSIDE_KEY), redis.incr(SEQ_KEY)]);
    if (inside !== 1) w.overlaps += 1;
    // Queued on the same connection ahead of the release, so Redis runs it before the lock is freed.
    const leave = redis.decr(INSIDE_KEY);
    const releasedAt = epochNow();
    try {
      await release();
    } catch (err) {
      if (!w.stopped) stats.errors += 1;
      noteError(w, err);
    }
    await leave;
    if (acquiredAt >= w.startAt && acquiredAt < w.deadline) {
      stats.acquisitions += 1;
      stats.maxWaitMs = Math.max(stats.maxWaitMs, acquiredPerf - waitStart);
      w.records.seq.push(seq);
      w.records.who.push(stats.id);
      w.records.latencyMs.push(latency);
      w.records.waitMs.push(acquiredPerf - waitStart);
      w.records.acquiredAt.push(acquiredAt);
      w.records.releasedAt.push(releasedAt);
    } else if (waitStart < w.deadlinePerf) {
      stats.maxWaitMs = Math.max(stats.maxWaitMs, w.deadlinePerf - waitStart);
    }
    if (pauseMs > 0 && !w.stopped) await sleep(pauseMs);
  }
}

async function run(go: GoMessage): Promise<void> {
  const current = phase;
  if (!current) throw new Error('go before setup');
  const { setup, contenders } = current;
  await sleepUntil(go.startAt);
  const w: Window = {
    startAt: go.startAt,
    deadline: go.deadline,
    deadlinePerf: performance.now() + (go.deadline - Date.now()),
    stopped: false,
    records: { seq: [], who: [], latencyMs: [], waitMs: [], acquiredAt: [], releasedAt: [] },
    overlaps: 0,
    errorSamples: new Set(),
  };
  counter.start();
  const cpuStart = process.cpuUsage();
  let cpu: NodeJS.CpuUsage | undefined;
  let commands: ReturnType<CommandCounter['stop']> | undefined;
  const windowOver = new Promise<void>((resolve) => {
    setTimeout(
      () => {
        commands = counter.stop();
        cpu = process.cpuUsage(cpuStart);
        w.stopped = true;
        for (const c of contenders) c.controller.abort(new Error('benchmark window over'));
        resolve();
      },
      Math.max(0, go.deadline - Date.now()),
    );
  });
  const loops = Promise.all(contenders.map((c) => runContender(w, c, setup.pauseMs)));
  current.loops = loops;
  await windowOver;

  const drainStart = performance.now();
  let timer: NodeJS.Timeout | undefined;
  const drained = await Promise.race([
    loops.then(() => true),
    new Promise<boolean>((resolve) => {
      timer = setTimeout(() => resolve(false), go.drainMs);
    }),
  ]);
  clearTimeout(timer);
  current.drained = drained;
  await send({
    type: 'result',
    contenders: contenders.map((c) => c.stats),
    ...w.records,
    overlaps: w.overlaps,
    clientCommands: commands?.counted ?? {},
    bookkeepingCommands: commands?.excluded ?? {},
    cpuMs: cpu ? (cpu.user + cpu.system) / 1_000 : 0,
    errorSamples: [...w.errorSamples],
    drainMs: performance.now() - drainStart,
    drainTimedOut: !drained,
  });
}

async function tearDown(): Promise<void> {
  const current = phase;
  if (!current) throw new Error('teardown without a phase');
  const graceful = current.drained !== false;
  await Promise.all(
    current.contenders.map(async (c) => {
      try {
        await c.adapter.close();
        if (graceful) await c.redis.quit();
      } catch {
        // closing anyway
      }
      c.redis.disconnect();
    }),
  );
  // Loops still stuck in an acquire end once their connection is gone.
  if (current.loops) await Promise.race([current.loops.catch(() => {}), sleep(2_000)]);
  phase = undefined;
  await send({ type: 'closed' });
}

function fail(err: unknown): void {
  const message = err instanceof Error ? (err.stack ?? err.message) : String(err);
  send({ type: 'fatal', message })
    .catch(() => {})
    .finally(() => process.exit(1));
}

process.on('message', (m: ParentMessage) => {
  switch (m.type) {
    case 'setup':
      setUp(m).catch(fail);
      break;
    case 'go':
      run(m).catch(fail);
      break;
    case 'teardown':
      tearDown().catch(fail);
      break;
  }
});
// The parent went away (finished, or crashed): never linger.
process.on('disconnect', () => process.exit(0));
process.on('uncaughtException', fail);
process.on('unhandledRejection', fail);

await send({ type: 'hello', pid: process.pid });
