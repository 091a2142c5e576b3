// Server commands per uncontended lock operation (`npm run bench:lock-commands`): INFO commandstats
// (which counts redis.call inside Lua too) around N runs of each variant on a private redis-server.
//
// Variants: a raw SET NX PX + compare-and-delete pair (the floor), acquire({waitMs}) + release,
// tryAcquire + release, and runGuarded with one guarded INCR (its own command is not counted). The
// counts go to .bench/lock-commands.json; the previous file's counts are printed alongside.
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { LockClient } from '@flashsale/lock';
import { RedisServer } from '../test/support/redis-server.ts';
import { envNumber, repoRoot, writeJson } from './lib/output.ts';
import { type CommandCounts, commandStats, diffCommandStats } from './lib/redis-info.ts';
import { ratio, sumValues } from './lib/stats.ts';
import { num, printTable, times } from './lib/table.ts';

const ITERATIONS = Math.round(envNumber('BENCH_ITERATIONS', 1_000));
const RESULT = 'lock-commands';

interface Row {
  variant: string;
  perOp: number;
  byCommand: CommandCounts;
  previous?: number;
}

async function main(): Promise<void> {
  const server = await RedisServer.start();
  const redis = server.client();
  const admin = server.client();
  const client = new LockClient(redis);
  const compareAndDelete = String(
    await redis.script(
      'LOAD',
      "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) end return 0",
    ),
  );
  const variants: Array<{ name: string; guarded: number; run: (i: number) => Promise<void> }> = [
    {
      name: 'raw SET NX PX + compare-and-delete (EVALSHA)',
      guarded: 0,
      run: async (i) => {
        await redis.set('raw', `v${i}`, 'PX', 10_000, 'NX');
        await redis.evalsha(compareAndDelete, 1, 'raw', `v${i}`);
      },
    },
    {
      name: 'acquire({waitMs, leaseMs}) + release',
      guarded: 0,
      run: async () => {
        const h = await client.acquire('ours', { waitMs: 10_000, leaseMs: 10_000 });
        await h.release();
      },
    },
    {
      name: 'tryAcquire({leaseMs}) + release',
      guarded: 0,
      run: async () => {
        const h = await client.tryAcquire('ours', { leaseMs: 10_000 });
        if (!h) throw new Error('lock busy');
        await h.release();
      },
    },
    {
      name: 'runGuarded (acquire + INCR + release pipelined)',
      guarded: 1,
      run: async () => {
        await client.runGuarded('ours', { leaseMs: 10_000, waitMs: 10_000 }, (p) => {
          p.incr('guarded');
        });
      },
    },
  ];
  const previous = readPrevious();
  const rows: Row[] = [];
  try {
    for (const v of variants) {
      for (let i = 0; i < 50; i++) await v.run(i); // warm-up: scripts loaded, subscriber started
      const before = await commandStats(admin);
      for (let i = 0; i < ITERATIONS; i++) await v.run(i);
      const byCommand = diffCommandStats(before, await commandStats(admin));
      for (const k of Object.keys(byCommand)) byCommand[k] = (byCommand[k] ?? 0) / ITERATIONS;
      const perOp = sumValues(byCommand) - v.guarded;
      rows.push({ variant: v.name, perOp, byCommand, previous: previous.get(v.name) });
    }
  } finally {
    await client.close();
    redis.disconnect();
    admin.disconnect();
    await server.stop();
  }
  const floor = rows[0]?.perOp ?? Number.NaN;
  printTable(
    `=== server commands per uncontended operation (INFO commandstats, ${num(ITERATIONS)} runs each) ===`,
    [
      { header: 'variant', value: (r: Row) => r.variant, align: 'left' },
      { header: 'commands', value: (r) => num(r.perOp, 2) },
      { header: 'vs raw', value: (r) => times(ratio(r.perOp, floor)) },
      { header: 'previous run', value: (r) => num(r.previous, 2) },
      { header: 'now / previous', value: (r) => times(ratio(r.perOp, r.previous ?? Number.NaN)) },
      {
        header: 'by command',
        value: (r) =>
          Object.entries(r.byCommand)
            .sort(([a], [b]) => a.localeCompare(b))
            .map(([c, n]) => `${c} ${num(n, 2)}`)
            .join(', '),
        align: 'left',
      },
    ],
    rows,
  );
  const file = writeJson(RESULT, { iterations: ITERATIONS, rows });
  console.log(`\nresults written to ${file.replace(`${repoRoot}/`, '')}`);
}

/** Commands per operation by variant from the last run's file, if any. */
function readPrevious(): Map<string, number> {
  const file = join(repoRoot, '.bench', `${RESULT}.json`);
  if (!existsSync(file)) return new Map();
  const data = JSON.parse(readFileSync(file, 'utf8')) as { rows?: Row[] };
  return new Map((data.rows ?? []).map((r) => [r.variant, r.perOp]));
}

await main();
