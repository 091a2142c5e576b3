// The uncontended part of `npm run bench:locks`: acquire + release of this library against the raw
// SET NX PX + compare-and-delete pair, interleaved blocks on one connection; and the machine's ceilings
// (one round trip's p50, redis-server's commands/s).
import { performance } from 'node:perf_hooks';
import { LockClient } from '@flashsale/lock';
import { Redis } from 'ioredis';
import { ratio, type Summary, summarize } from './lib/stats.ts';
import { type Check, mark, ms, num, printTable, times } from './lib/table.ts';

/** Unmeasured runs of each uncontended variant first: a path with more code takes longer to be optimized. */
const UNCONTENDED_WARMUP = 2_000;

/** p50 of a PING on an idle connection: the round trip the critical-section ceiling adds per hand-off. */
export async function roundTripMs(url: string, iterations = 2_000): Promise<number> {
  const redis = new Redis(url);
  redis.on('error', () => {});
  const samples: number[] = [];
  try {
    for (let i = 0; i < iterations; i++) {
      const t0 = performance.now();
      await redis.ping();
      samples.push(performance.now() - t0);
    }
  } finally {
    redis.disconnect();
  }
  return summarize(samples.slice(iterations / 4)).p50;
}

/**
 * What one redis-server here executes per second when nothing but its command loop limits it: pipelined
 * INCRs (batches of 1000) for one second. The cheapest real command, so an upper bound for any lock.
 */
export async function measureRedisCommandsPerSec(redis: Redis): Promise<number> {
  const started = performance.now();
  let commands = 0;
  while (performance.now() - started < 1_000) {
    const pipeline = redis.pipeline();
    for (let i = 0; i < 1_000; i++) pipeline.incr('bench:ceiling');
    await pipeline.exec();
    commands += 1_000;
  }
  await redis.del('bench:ceiling');
  return commands / ((performance.now() - started) / 1_000);
}

export interface UncontendedRow {
  variant: string;
  latencyMs: Summary;
  ratioP50: number;
  ratioMean: number;
}

interface Variant {
  name: string;
  run: () => Promise<void>;
}

/** The raw pair (the floor) and this library's two uncontended forms, on one connection. */
function uncontendedVariants(redis: Redis, client: LockClient): Variant[] {
  redis.defineCommand('benchCompareAndDelete', {
    numberOfKeys: 1,
    lua: "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) end return 0",
  });
  const cad = (redis as unknown as { benchCompareAndDelete(k: string, v: string): Promise<number> })
    .benchCompareAndDelete;
  let n = 0;
  return [
    {
      name: 'raw SET NX PX + compare-and-delete (EVALSHA)',
      run: async () => {
        const value = `raw:${++n}`;
        if ((await redis.set('bench-raw', value, 'PX', 10_000, 'NX')) !== 'OK')
          throw new Error('raw lock busy');
        if ((await cad.call(redis, 'bench-raw', value)) !== 1) throw new Error('raw lock not released');
      },
    },
    {
      name: 'flashsale acquire({waitMs, leaseMs}) + release',
      run: async () => {
        const h = await client.acquire('bench-ours', { waitMs: 10_000, leaseMs: 10_000 });
        await h.release();
      },
    },
    {
      name: 'flashsale tryAcquire({leaseMs}) + release',
      run: async () => {
        const h = await client.tryAcquire('bench-ours', { leaseMs: 10_000 });
        if (!h) throw new Error('lock busy');
        await h.release();
      },
    },
  ];
}

/** Each variant's latencies (ms), after its warm-up, measured in interleaved blocks. */
async function sample(variants: Variant[], iterations: number): Promise<number[][]> {
  const samples = variants.map(() => [] as number[]);
  const block = 100;
  for (const v of variants) for (let i = 0; i < UNCONTENDED_WARMUP; i++) await v.run();
  // Interleaved blocks, so drift (GC, CPU frequency, other load) hits every variant alike.
  for (let done = 0; done < iterations; done += block) {
    const count = Math.min(block, iterations - done);
    for (const [i, v] of variants.entries()) {
      const out = samples[i] as number[];
      for (let k = 0; k < count; k++) {
        const t0 = performance.now();
        await v.run();
        out.push(performance.now() - t0);
      }
    }
  }
  return samples;
}

export async function runUncontended(
  url: string,
  iterations: number,
  target: number,
): Promise<{ rows: UncontendedRow[]; checks: Check[] }> {
  const redis = new Redis(url);
  redis.on('error', () => {});
  const client = new LockClient(redis);
  const variants = uncontendedVariants(redis, client);
  let samples: number[][];
  try {
    samples = await sample(variants, iterations);
  } finally {
    await client.close();
    redis.disconnect();
  }
  const summaries = samples.map((s) => summarize(s));
  const raw = summaries[0] as Summary;
  const rows: UncontendedRow[] = variants.map((v, i) => {
    const s = summaries[i] as Summary;
    return {
      variant: v.name,
      latencyMs: s,
      ratioP50: ratio(s.p50, raw.p50),
      ratioMean: ratio(s.mean, raw.mean),
    };
  });
  printTable(
    `=== uncontended acquire+release, one process, one connection, ${num(iterations)} iterations each ===`,
    [
      { header: 'variant', value: (r: UncontendedRow) => r.variant, align: 'left' },
      { header: 'p50 ms', value: (r) => ms(r.latencyMs.p50) },
      { header: 'p90 ms', value: (r) => ms(r.latencyMs.p90) },
      { header: 'p99 ms', value: (r) => ms(r.latencyMs.p99) },
      { header: 'mean ms', value: (r) => ms(r.latencyMs.mean) },
      { header: 'vs raw p50', value: (r) => times(r.ratioP50) },
      { header: 'vs raw mean', value: (r) => times(r.ratioMean) },
    ],
    rows,
  );
  const ours = rows[1] as UncontendedRow;
  const checks: Check[] = [
    {
      name: `uncontended acquire+release <= ${target}x raw SET NX PX + CAD`,
      pass: ours.ratioP50 <= target && ours.ratioMean <= target,
      detail: `p50 ${times(ours.ratioP50)}, mean ${times(ours.ratioMean)}`,
    },
  ];
  for (const c of checks) console.log(`  ${mark(c.pass)}  ${c.name}: ${c.detail}`);
  return { rows, checks };
}
