// BENCH_PROFILE=1: instead of the phases, c8 (or d, or the queued answer) with the API under
// `node --cpu-prof`, and its top functions, self time by origin and by category.
import { mkdirSync, readdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { freePort } from '../../harness/redis-server.ts';
import { environment, repoRoot, writeJson } from '../lib/output.ts';
import { num, printTable } from '../lib/table.ts';
import { blockLine } from './answer-cost.ts';
import type { BenchRun } from './bench-run.ts';
import { BIG_STOCK, SOLD_OUT_STOCK } from './options.ts';
import type { Phase } from './phase.ts';
import { type ProfileSummary, summarizeProfile } from './profile.ts';
import { spawnProfiled } from './profiled-api.ts';
import { realPath, sellOut, warmUp } from './rounds.ts';
import { runScenario, type ScenarioResult } from './scenario.ts';

/** BENCH_PROFILE_SOLD_OUT=1 profiles d, BENCH_PROFILE_QUEUED=1 the waiting room's 429 (a line nobody passes). */
function settings() {
  return {
    soldOut: process.env.BENCH_PROFILE_SOLD_OUT === '1',
    queued: process.env.BENCH_PROFILE_QUEUED === '1',
    // Another checkout's API (e.g. a worktree of the commit before a change).
    root: process.env.BENCH_PROFILE_ROOT || repoRoot,
    // Another endpoint for comparison, e.g. /bench/unlocked?enqueue=1.
    path: process.env.BENCH_PROFILE_PATH || '/api/orders',
  };
}

async function profiled(
  bench: BenchRun,
  dir: string,
): Promise<{ c8: ScenarioResult; file: string; p: ProfileSummary }> {
  const s = settings();
  const worker = await bench.spawn('worker');
  const env = { ...bench.infra.env, LOG_LEVEL: 'warn', ...(s.queued && { WAITING_ROOM: 'on' }) };
  const api = await spawnProfiled('api', env, await freePort(), dir, s.root);
  bench.watch(api, 'api', api.pid);
  await bench.createSale(api.url, 'bench-warm2', BIG_STOCK, 8);
  await bench.createSale(api.url, 'bench-c8', s.soldOut ? SOLD_OUT_STOCK : BIG_STOCK, 8);
  const soldBefore = s.soldOut ? await sellOut(bench, api.url, 'bench-c8') : 0;
  await warmUp(bench, [api.url], 'bench-warm2', ['/api/orders'], 'rows');
  if (s.queued) {
    await blockLine(bench.redis, 'bench-c8');
    // The process reads the line back within a tick (100 ms) of its next order for it.
    await sleep(300);
  }
  const start = Number(process.hrtime.bigint() / 1000n);
  const c8 = await runScenario(bench, {
    ...realPath(s.soldOut ? 'd' : 'c8', `${s.path}, 8 shards (API under --cpu-prof)`, [api.url], 'bench-c8'),
    path: s.path,
    expectStatus: s.soldOut ? 409 : s.queued ? 429 : 202,
    check: s.queued ? 'none' : 'rows',
    acceptedBefore: soldBefore,
  });
  const end = start + bench.options.seconds * 1_000_000;
  await api.stop();
  await bench.stop(worker);
  // tsx's loader runs on a thread of its own, which gets a profile too: take the main thread's (tid 0).
  const files = readdirSync(dir).filter((f) => f.endsWith('.cpuprofile'));
  const name = files.find((f) => /\.\d+\.0\.\d+\.cpuprofile$/.test(f)) ?? files[0];
  if (!name) throw new Error(`no .cpuprofile written in ${dir}`);
  const file = join(dir, name);
  return { c8, file, p: summarizeProfile(file, repoRoot, 10, { start, end }) };
}

function printProfile(c8: ScenarioResult, p: ProfileSummary, path: string): void {
  type Fn = ProfileSummary['top'][number];
  const functions = (share: string) => [
    { header: share, value: (f: Fn) => (f.share * 100).toFixed(1) },
    { header: 'function', value: (f: Fn) => f.name, align: 'left' as const },
    { header: 'where', value: (f: Fn) => f.where, align: 'left' as const },
  ];
  printTable(`Top 10 functions by self time (API process, ${path})`, functions('self %'), p.top);
  type Origin = ProfileSummary['byOrigin'][number];
  printTable(
    'Self time by origin',
    [
      { header: 'self %', value: (o: Origin) => (o.share * 100).toFixed(1) },
      { header: 'origin', value: (o: Origin) => o.origin, align: 'left' },
    ],
    p.byOrigin.slice(0, 15),
  );
  printTable(
    'Inclusive time (self + callees) of src/ functions and hot package entry points',
    functions('incl %'),
    p.inclusive,
  );
  const apiUs = ((c8.cores.api ?? 0) * c8.redis.wallSeconds * 1e6) / Math.max(1, c8.redis.answers);
  type Category = ProfileSummary['categories'][number];
  printTable(
    `API CPU by category (self time, idle left out; µs per answer of ${num(apiUs)} µs measured under the profiler)`,
    [
      { header: 'share %', value: (c: Category) => (c.share * 100).toFixed(1) },
      { header: 'µs/answer', value: (c: Category) => num(c.share * apiUs) },
      { header: 'category', value: (c: Category) => c.category, align: 'left' },
    ],
    p.categories,
  );
}

export const profilePhase: Phase = {
  name: 'profile',
  inFullRun: false, // BENCH_PROFILE=1 selects it
  async run(bench) {
    const dir = join(repoRoot, '.bench', 'profiles');
    rmSync(dir, { recursive: true, force: true });
    mkdirSync(dir, { recursive: true });
    const { c8, file, p } = await profiled(bench, dir);
    const path = settings().path;
    console.log(
      `\n${path} (8 shards) with the API under --cpu-prof: ${num(c8.perSecond)} orders/s (profiling slows it); ${num(p.samples)} samples${p.windowMatched ? ' inside the c8 window' : ' (whole process: window not matched)'}, idle ${(p.idleShare * 100).toFixed(1)}%`,
    );
    printProfile(c8, p, path);
    console.log(`profile: ${file} (open in Chrome DevTools > Performance)`);
    writeJson('orders-profile', { environment: environment(), c8, profile: p });
    return { report: () => ({ checks: [] }) };
  },
};
