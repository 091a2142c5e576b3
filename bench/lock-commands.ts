// Server commands per uncontended lock operation (`npm run bench:lock-commands`): INFO commandstats
// (which counts redis.call inside Lua too) around N runs of each variant on a private redis-server.
//
// Variants: a raw SET NX PX + compare-and-delete pair (the floor), acquire({waitMs}) + release,
// tryAcquire + release, runGuarded with one guarded INCR (its own command is not counted), and a
// contended round: A holds, B queues, A's release frees the lock and wakes B, which asks again and
// takes it (normal mode: B queued a moment ago), B releases; and the same round in starvation mode
// (A's client with starvationMs 0: the release hands the lock to B). A contended acquisition is a
// round less one uncontended acquire + release (A's take and B's last release).
// The counts go to .bench/lock-commands.json; the previous file's counts are printed alongside.
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { LockClient } from '@flashsale/lock';
import { lockKeys } from '@flashsale/lock/toolkit';
import { RedisServer } from '../harness/redis-server.ts';
import { envNumber, repoRoot, writeJson } from './lib/output.ts';
import { type CommandCounts, commandStats, diffCommandStats } from './lib/redis-info.ts';
import { ratio, sumValues } from './lib/stats.ts';
import { num, printTable, times } from './lib/table.ts';

const ITERATIONS = Math.round(envNumber('BENCH_ITERATIONS', 1_000));
const RESULT = 'lock-commands';

const CONTENDED = 'contended round: A holds, B queued, hand-off to B, B releases';
/** The same round with starvationMs 0: every release hands the lock to the oldest waiter. */
const CONTENDED_STARVED =
  'contended round, starvation mode (starvationMs 0): A holds, B queued, hand-off to B, B releases';
const PER_CONTENDED = 'per contended acquisition (round less one acquire + release)';
const PER_CONTENDED_STARVED = 'per contended acquisition, starvation mode';

interface Variant {
  name: string;
  /** Commands of the caller's own (guarded) work, not the lock's. */
  guarded: number;
  run: (i: number) => Promise<void>;
}

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
  const waiterRedis = server.client();
  const waiter = new LockClient(waiterRedis);
  const queue = lockKeys('contended').queue;
  // starvationMs 0: the releaser hands off (starvation mode); the default client's release of a lock
  // whose waiter queued a moment ago frees it and wakes the waiter, which asks again (normal mode).
  const fifoRedis = server.client();
  const fifo = new LockClient(fifoRedis, { starvationMs: 0 });
  const compareAndDelete = String(
    await redis.script(
      'LOAD',
      "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) end return 0",
    ),
  );
  const variants: Variant[] = [
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
    { name: CONTENDED, guarded: 0, run: () => contendedRound(client) },
    { name: CONTENDED_STARVED, guarded: 0, run: () => contendedRound(fifo) },
  ];
  /** A (`holder`) holds, B queues behind it, A releases, B gets the lock and releases. */
  async function contendedRound(holder: LockClient): Promise<void> {
    const held = await holder.acquire('contended', { waitMs: 10_000, leaseMs: 10_000 });
    const waiting = waiter.acquire('contended', { waitMs: 10_000, leaseMs: 10_000 });
    // B's first ask must find the lock held: wait until it is queued (the ZCARDs are not counted).
    while ((await admin.zcard(queue)) === 0) await new Promise((r) => setImmediate(r));
    await held.release();
    await (await waiting).release();
  }
  const previous = readPrevious();
  const rows: Row[] = [];
  try {
    for (const v of variants) {
      for (let i = 0; i < 50; i++) await v.run(i); // warm-up: scripts loaded, subscriber started
      const before = await commandStats(admin);
      for (let i = 0; i < ITERATIONS; i++) await v.run(i);
      const byCommand = diffCommandStats(before, await commandStats(admin), ['info', 'zcard']);
      for (const k of Object.keys(byCommand)) byCommand[k] = (byCommand[k] ?? 0) / ITERATIONS;
      const perOp = sumValues(byCommand) - v.guarded;
      rows.push({ variant: v.name, perOp, byCommand, previous: previous.get(v.name) });
    }
  } finally {
    await client.close();
    await waiter.close();
    await fifo.close();
    fifoRedis.disconnect();
    redis.disconnect();
    waiterRedis.disconnect();
    admin.disconnect();
    await server.stop();
  }
  const floor = rows[0]?.perOp ?? Number.NaN;
  const pair = rows[1];
  for (const [name, per] of [
    [CONTENDED, PER_CONTENDED],
    [CONTENDED_STARVED, PER_CONTENDED_STARVED],
  ] as const) {
    const round = rows.find((r) => r.variant === name);
    if (!pair || !round) continue;
    rows.push({
      variant: per,
      perOp: round.perOp - pair.perOp,
      byCommand: subtract(round.byCommand, pair.byCommand),
      previous: previous.get(per) ?? previous.get(PER_CONTENDED),
    });
  }
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

/** a - b per command, dropping zeros. */
function subtract(a: CommandCounts, b: CommandCounts): CommandCounts {
  const out: CommandCounts = {};
  for (const cmd of new Set([...Object.keys(a), ...Object.keys(b)])) {
    const d = (a[cmd] ?? 0) - (b[cmd] ?? 0);
    if (Math.abs(d) > 1e-9) out[cmd] = d;
  }
  return out;
}

/** Commands per operation by variant from the last run's file, if any. */
function readPrevious(): Map<string, number> {
  const file = join(repoRoot, '.bench', `${RESULT}.json`);
  if (!existsSync(file)) return new Map();
  const data = JSON.parse(readFileSync(file, 'utf8')) as { rows?: Row[] };
  return new Map((data.rows ?? []).map((r) => [r.variant, r.perOp]));
}

await main();
