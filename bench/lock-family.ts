// Lock-family benchmark: the fair lock and the multi-master RedLock(3) under 50 contenders, as ratios
// to the plain reentrant lock, and RedLock(3) against redlock (npm) and redis-semaphore's RedlockMutex
// on the same three private masters. Each contender has its own connection(s) and lock object and
// loops acquire → INCR (inside the critical section) → release for the window; the INCR values give
// the true order of acquisitions, so a hand-off is two consecutive values taken by different
// contenders. Results also go to .bench/lock-family.json.
//
// Run alone: `tsx bench/lock-family.ts`; or call runLockFamilyBench() (e.g. at the end of
// bench/locks.ts). Environment: BENCH_SECONDS (window per variant, default 3).
import { setMaxListeners } from 'node:events';
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import { pathToFileURL } from 'node:url';
import { FairLock, LockAcquireTimeoutError, LockClient, RedLock } from '@flashsale/lock';
import type { Redis } from 'ioredis';
import { RedlockMutex, TimeoutError } from 'redis-semaphore';
import { RedisServer } from '../harness/redis-server.ts';
import { environment, envNumber, writeJson } from './lib/output.ts';
import { ratio, type Summary, summarize } from './lib/stats.ts';
import { type Check, mark, ms, num, printTable, times } from './lib/table.ts';

// redlock 5.0.0-beta.2's types are hidden from NodeNext resolution by its "exports": typed locally.
interface RedlockLock {
  release(): Promise<unknown>;
}
interface RedlockInstance {
  acquire(resources: string[], duration: number): Promise<RedlockLock>;
  on(event: 'error', listener: (err: Error) => void): unknown;
}
interface RedlockModule {
  default: new (clients: Redis[], settings?: Record<string, number>) => RedlockInstance;
  ExecutionError: new (...args: never[]) => Error;
}
const redlockSpecifier: string = 'redlock';

const CONTENDERS = 50;
const LEASE_MS = 10_000;
const WAIT_MS = 10_000;
const LOCK_NAME = 'family-bench-lock';
const SEQ_KEY = 'family-bench:seq';

type VariantName = 'plain' | 'fair' | 'redlock3' | 'redlock-npm' | 'redlock-npm-tuned' | 'semaphore-redlock';

const LABELS: Record<VariantName, string> = {
  plain: 'LockClient (plain reentrant lock, 1 Redis)',
  fair: 'FairLock (1 Redis)',
  redlock3: 'RedLock over 3 masters (this library)',
  'redlock-npm': 'redlock 5 over 3 masters (defaults)',
  'redlock-npm-tuned': 'redlock 5 over 3 masters (retryDelay 10, jitter 5, unlimited)',
  'semaphore-redlock': 'redis-semaphore RedlockMutex over 3 masters (defaults)',
};

class GaveUp extends Error {}

interface Contender {
  acquire(signal: AbortSignal): Promise<() => Promise<unknown>>;
  /** Connection to master 0, for the INCR inside the critical section. */
  counter: Redis;
  close(): Promise<void>;
}

export interface VariantResult {
  variant: VariantName;
  label: string;
  acquisitions: number;
  acquisitionsPerSec: number;
  handoffsPerSec: number;
  latencyMs: Summary;
  gaveUp: number;
  errors: number;
  overlaps: number;
  neverAcquired: number;
  errorSamples: string[];
}

export interface FamilyReport {
  environment: Record<string, unknown>;
  seconds: number;
  contenders: number;
  results: VariantResult[];
  ratios: Record<string, number>;
  checks: Check[];
}

async function contenders(variant: VariantName, servers: RedisServer[]): Promise<Contender[]> {
  const { default: Redlock, ExecutionError } = (await import(redlockSpecifier)) as RedlockModule;
  const conns = (n: number) => servers.slice(0, n).map((s) => s.client({ maxRetriesPerRequest: 3 }));
  return Array.from({ length: CONTENDERS }, (): Contender => {
    switch (variant) {
      case 'plain':
      case 'fair': {
        const [redis] = conns(1) as [Redis];
        const client = new LockClient(redis);
        const lock = variant === 'fair' ? new FairLock(client) : client;
        return {
          counter: redis,
          acquire: async (signal) => {
            try {
              const h = await lock.acquire(LOCK_NAME, { waitMs: WAIT_MS, leaseMs: LEASE_MS, signal });
              return () => h.release();
            } catch (err) {
              if (err instanceof LockAcquireTimeoutError) throw new GaveUp(err.message);
              throw err;
            }
          },
          close: () => client.close(),
        };
      }
      case 'redlock3': {
        const masters = conns(3);
        const lock = new RedLock(masters);
        return {
          counter: masters[0] as Redis,
          acquire: async (signal) => {
            try {
              const h = await lock.acquire(LOCK_NAME, { waitMs: WAIT_MS, leaseMs: LEASE_MS, signal });
              return () => h.release();
            } catch (err) {
              if (err instanceof LockAcquireTimeoutError) throw new GaveUp(err.message);
              throw err;
            }
          },
          close: () => lock.close(),
        };
      }
      case 'redlock-npm':
      case 'redlock-npm-tuned': {
        const masters = conns(3);
        const settings: Record<string, number> =
          variant === 'redlock-npm' ? {} : { retryDelay: 10, retryJitter: 5, retryCount: -1 };
        const redlock = new Redlock(masters, settings);
        redlock.on('error', () => {});
        return {
          counter: masters[0] as Redis,
          acquire: async (signal) => {
            signal.throwIfAborted();
            try {
              const l = await redlock.acquire([LOCK_NAME], LEASE_MS);
              return () => l.release();
            } catch (err) {
              if (err instanceof ExecutionError) throw new GaveUp(err.message);
              throw err;
            }
          },
          close: async () => {},
        };
      }
      case 'semaphore-redlock': {
        const masters = conns(3);
        const mutex = new RedlockMutex(masters, LOCK_NAME, {
          lockTimeout: LEASE_MS,
          acquireTimeout: WAIT_MS,
        });
        return {
          counter: masters[0] as Redis,
          acquire: async (signal) => {
            try {
              await mutex.acquire(signal);
              return () => mutex.release();
            } catch (err) {
              if (err instanceof TimeoutError) throw new GaveUp(err.message);
              throw err;
            }
          },
          close: async () => {},
        };
      }
    }
    throw new Error(`unknown variant ${variant satisfies never}`);
  });
}

async function runVariant(
  variant: VariantName,
  servers: RedisServer[],
  seconds: number,
): Promise<VariantResult> {
  const admins = servers.map((s) => s.client());
  await Promise.all(admins.map((a) => a.flushall()));
  const cs = await contenders(variant, servers);
  // Warm-up: connections up, scripts loaded, subscribers subscribed.
  for (const c of cs) await (await c.acquire(new AbortController().signal))();
  await Promise.all(admins.map((a) => a.flushall()));

  const seq: number[] = [];
  const who: number[] = [];
  const latency: number[] = [];
  const perContender = new Array<number>(cs.length).fill(0);
  const errorSamples = new Set<string>();
  let gaveUp = 0;
  let errors = 0;
  let inside = 0;
  let overlaps = 0;
  let stopped = false;
  const controller = new AbortController();
  setMaxListeners(0, controller.signal); // one signal shared by every contender
  const windowMs = seconds * 1000;
  const start = performance.now();
  const stopTimer = setTimeout(() => {
    stopped = true;
    controller.abort(new Error('window over'));
  }, windowMs);

  await Promise.all(
    cs.map(async (c, id) => {
      while (!stopped) {
        const t0 = performance.now();
        let release: (() => Promise<unknown>) | undefined;
        try {
          release = await c.acquire(controller.signal);
        } catch (err) {
          if (stopped) break;
          if (err instanceof GaveUp) gaveUp += 1;
          else {
            errors += 1;
            if (errorSamples.size < 3)
              errorSamples.add(err instanceof Error ? `${err.name}: ${err.message}` : String(err));
            await sleep(5);
          }
          continue;
        }
        const took = performance.now() - t0;
        inside += 1;
        if (inside > 1) overlaps += 1;
        const n = await c.counter.incr(SEQ_KEY);
        inside -= 1;
        try {
          await release();
        } catch (err) {
          errors += 1;
          if (errorSamples.size < 3)
            errorSamples.add(err instanceof Error ? `${err.name}: ${err.message}` : String(err));
        }
        if (t0 - start < windowMs && !stopped) {
          seq.push(n);
          who.push(id);
          latency.push(took);
          perContender[id] = (perContender[id] ?? 0) + 1;
        }
      }
    }),
  );
  clearTimeout(stopTimer);
  await Promise.all(cs.map((c) => c.close()));
  for (const a of admins) a.disconnect();

  const order = Array.from(seq.keys()).sort((a, b) => (seq[a] as number) - (seq[b] as number));
  let handoffs = 0;
  for (let i = 1; i < order.length; i++) {
    const prev = order[i - 1] as number;
    const cur = order[i] as number;
    if (seq[cur] === (seq[prev] as number) + 1 && who[cur] !== who[prev]) handoffs += 1;
  }
  return {
    variant,
    label: LABELS[variant],
    acquisitions: seq.length,
    acquisitionsPerSec: seq.length / seconds,
    handoffsPerSec: handoffs / seconds,
    latencyMs: summarize(latency),
    gaveUp,
    errors,
    overlaps,
    neverAcquired: perContender.filter((n) => n === 0).length,
    errorSamples: [...errorSamples],
  };
}

export async function runLockFamilyBench(options: { seconds?: number } = {}): Promise<FamilyReport> {
  const seconds = options.seconds ?? envNumber('BENCH_SECONDS', 3);
  const servers = await Promise.all([0, 1, 2].map(() => RedisServer.start()));
  const results: VariantResult[] = [];
  try {
    const variants: VariantName[] = [
      'plain',
      'fair',
      'redlock3',
      'redlock-npm',
      'redlock-npm-tuned',
      'semaphore-redlock',
    ];
    for (const v of variants) {
      process.stdout.write(`  lock family: ${v} ... `);
      const r = await runVariant(v, servers, seconds);
      console.log(`${num(r.handoffsPerSec)} hand-offs/s, p99 ${ms(r.latencyMs.p99)} ms`);
      results.push(r);
    }
  } finally {
    await Promise.all(servers.map((s) => s.stop()));
  }
  const get = (v: VariantName) => results.find((r) => r.variant === v);
  const handoffRatio = (a: VariantName, b: VariantName) =>
    ratio(get(a)?.handoffsPerSec ?? Number.NaN, get(b)?.handoffsPerSec ?? Number.NaN);
  const p99Ratio = (a: VariantName, b: VariantName) =>
    ratio(get(a)?.latencyMs.p99 ?? Number.NaN, get(b)?.latencyMs.p99 ?? Number.NaN);
  const ratios: Record<string, number> = {
    'fair/plain hand-offs': handoffRatio('fair', 'plain'),
    'fair/plain p99': p99Ratio('fair', 'plain'),
    'redlock3/plain hand-offs': handoffRatio('redlock3', 'plain'),
    'redlock3/plain p99': p99Ratio('redlock3', 'plain'),
    'redlock3/redlock-npm hand-offs': handoffRatio('redlock3', 'redlock-npm'),
    'redlock3/redlock-npm-tuned hand-offs': handoffRatio('redlock3', 'redlock-npm-tuned'),
    'redlock3/semaphore-redlock hand-offs': handoffRatio('redlock3', 'semaphore-redlock'),
    'redlock3/redlock-npm-tuned p99': p99Ratio('redlock3', 'redlock-npm-tuned'),
    'redlock3/semaphore-redlock p99': p99Ratio('redlock3', 'semaphore-redlock'),
  };
  const ours = results.filter((r) => ['plain', 'fair', 'redlock3'].includes(r.variant));
  const bestPeer = Math.max(
    ...results.filter((r) => !['plain', 'fair', 'redlock3'].includes(r.variant)).map((r) => r.handoffsPerSec),
  );
  const checks: Check[] = [
    {
      name: 'no overlap in any variant of this library',
      pass: ours.every((r) => r.overlaps === 0),
      detail: ours.map((r) => `${r.variant} ${r.overlaps}`).join(', '),
    },
    {
      name: 'every contender acquired (fair and RedLock(3))',
      pass: ours.every((r) => r.neverAcquired === 0 && r.gaveUp === 0),
      detail: ours.map((r) => `${r.variant}: never ${r.neverAcquired}, gave up ${r.gaveUp}`).join('; '),
    },
    {
      name: 'RedLock(3) hand-offs/s above the best multi-master peer',
      pass: (get('redlock3')?.handoffsPerSec ?? 0) > bestPeer,
      detail: `${num(get('redlock3')?.handoffsPerSec)} vs ${num(bestPeer)}`,
    },
  ];

  printTable(
    `=== lock family: ${CONTENDERS} contenders in one process, ${seconds} s per variant ===`,
    [
      { header: 'variant', value: (r: VariantResult) => r.variant, align: 'left' },
      { header: 'acq/s', value: (r) => num(r.acquisitionsPerSec) },
      { header: 'hand-offs/s', value: (r) => num(r.handoffsPerSec) },
      { header: 'p50 ms', value: (r) => ms(r.latencyMs.p50) },
      { header: 'p99 ms', value: (r) => ms(r.latencyMs.p99) },
      { header: 'max ms', value: (r) => ms(r.latencyMs.max) },
      { header: 'gave up', value: (r) => num(r.gaveUp) },
      { header: 'errors', value: (r) => num(r.errors) },
      { header: 'never got lock', value: (r) => num(r.neverAcquired) },
      { header: 'overlaps', value: (r) => num(r.overlaps) },
    ],
    results,
  );
  console.log('  p50/p99/max: duration of the acquire call that succeeded.');
  for (const r of results)
    if (r.errorSamples.length) console.log(`  ${r.variant} errors: ${r.errorSamples.join(' | ')}`);
  for (const [k, v] of Object.entries(ratios)) console.log(`  ${k}: ${times(v)}`);
  for (const c of checks) console.log(`  ${mark(c.pass)}  ${c.name}: ${c.detail}`);

  const report: FamilyReport = {
    environment: environment(),
    seconds,
    contenders: CONTENDERS,
    results,
    ratios,
    checks,
  };
  const file = writeJson('lock-family', report);
  console.log(`  results written to ${file}`);
  return report;
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  runLockFamilyBench().then(
    (r) =>
      process.exit(
        r.results.some((x) => x.overlaps > 0 && ['plain', 'fair', 'redlock3'].includes(x.variant)) ? 1 : 0,
      ),
    (err) => {
      console.error(err);
      process.exit(1);
    },
  );
}
