// `npm run test:partitions`: partitions, pauses and clock steps, tested the way Jepsen tests lock
// services (issue #26). Each scenario builds its own network namespaces (test/partitions/netns.ts),
// runs Redis, the lock services, the API processes and the writer in them under a load of orders,
// injects its fault, and ends with the four invariants (checks.ts). Prints a table, writes
// .bench/partitions.json, exits 1 if an invariant broke or a scenario could not run. Skips (exit 0,
// with the reason) only where network namespaces are unavailable (not root, no `ip netns`).
//
//   tsx test/partitions/run.ts          every scenario, in two lanes side by side
//   PARTITIONS_LANES=1 tsx test/partitions/run.ts   one scenario at a time
//   tsx test/partitions/run.ts b c      only b and c (also PARTITIONS=b,c)
//   PARTITIONS_SKIP=a tsx test/partitions/run.ts   all but a
import { mkdirSync, writeFileSync } from 'node:fs';
import { emptyResult, reapScenario, type ScenarioResult, scenarioScope } from '../faults/lib.ts';
import { withTimeout } from '../support/async.ts';
import { clusterMasterCut } from './a-cluster.ts';
import { pauseHolder } from './b-pause.ts';
import { clockStep } from './c-clock.ts';
import { lockServiceCut } from './d-lock-service.ts';
import { sweepLeftovers, unsupported } from './netns.ts';

interface Scenario {
  id: string;
  name: string;
  run: () => Promise<ScenarioResult>;
  /** Hard bound: the suite ends in bounded time even if a scenario hangs. */
  timeoutMs: number;
  /** Typical duration, to balance the lanes. */
  expectMs: number;
}

/**
 * Scenarios run in this many lanes side by side (PARTITIONS_LANES, default 2): d1 and d2 spend most
 * of their time waiting for a session to expire, and each scenario has its own network and stores.
 */
const LANES = Math.max(1, Number(process.env.PARTITIONS_LANES ?? 2) || 1);

const SCENARIOS: Scenario[] = [
  {
    id: 'a',
    name: 'Redis Cluster master cut off',
    run: clusterMasterCut,
    timeoutMs: 150_000,
    expectMs: 40_000,
  },
  { id: 'b', name: 'API paused holding a shard lock', run: pauseHolder, timeoutMs: 90_000, expectMs: 30_000 },
  { id: 'c', name: "Redis' clock stepped past a lease", run: clockStep, timeoutMs: 90_000, expectMs: 30_000 },
  {
    id: 'd1',
    name: 'etcd cut from a lock holder',
    run: () => lockServiceCut('d1', 'etcd'),
    timeoutMs: 120_000,
    expectMs: 55_000,
  },
  {
    id: 'd2',
    name: 'ZooKeeper cut from a lock holder',
    run: () => lockServiceCut('d2', 'zookeeper'),
    timeoutMs: 120_000,
    expectMs: 55_000,
  },
];

const list = (v: string | undefined) =>
  (v ?? '')
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);

async function runOne(s: Scenario): Promise<ScenarioResult> {
  const started = performance.now();
  const result = await withTimeout(scenarioScope.run(s.id, s.run), s.timeoutMs, `scenario ${s.id}`).catch(
    (err: unknown) => {
      const r = emptyResult(s.id, s.name);
      r.ok = false;
      r.failures.push(`scenario error: ${(err as Error).stack ?? String(err)}`);
      return r;
    },
  );
  await reapScenario(s.id);
  result.ms = Math.round(performance.now() - started);
  return result;
}

function report(results: ScenarioResult[]): string {
  const out: string[] = [];
  for (const r of results) {
    out.push(
      `${r.id}. ${r.name}: ${r.ok ? 'ok' : 'FAIL'} in ${(r.ms / 1000).toFixed(1)} s — sent ${r.sent}, 202 ${r.accepted}, rows ${r.rows}, lost ${r.lost}, doubled ${r.doubled}, rows behind refusals ${r.orphans}, ambiguous ${r.noAnswer}, oversold ${r.oversold}`,
    );
    out.push(`   fault: ${r.faults || '(none injected)'}`);
    out.push(`   answers: ${JSON.stringify(r.details.answers ?? {})}`);
    out.push(`   books: ${JSON.stringify(r.details.books ?? {})}`);
    const behind = (r.details.rowsBehindRefusals as { byAnswer?: object } | undefined)?.byAnswer;
    if (behind && Object.keys(behind).length > 0)
      out.push(`   rows behind refusals: ${JSON.stringify(behind)}`);
    for (const f of r.failures) out.push(`   FAIL  ${f}`);
    for (const n of r.notes) out.push(`   note  ${n}`);
  }
  return out.join('\n');
}

const why = unsupported();
if (why) {
  process.stdout.write(`partitions: SKIPPED: ${why}\n`);
  process.exit(0);
}
for (const signal of ['SIGINT', 'SIGTERM'] as const) process.once(signal, () => process.exit(130));
sweepLeftovers();
const wanted = [...process.argv.slice(2), ...list(process.env.PARTITIONS)];
const skipped = list(process.env.PARTITIONS_SKIP);
const started = performance.now();
const results: ScenarioResult[] = [];
const chosen = SCENARIOS.filter(
  (x) => (wanted.length === 0 || wanted.includes(x.id)) && !skipped.includes(x.id),
);
// Longest first, each to the lane with the least work so far.
const lanes: Scenario[][] = Array.from({ length: LANES }, () => []);
const work = lanes.map(() => 0);
for (const s of [...chosen].sort((a, b) => b.expectMs - a.expectMs)) {
  const lane = work.indexOf(Math.min(...work));
  lanes[lane]?.push(s);
  work[lane] = (work[lane] ?? 0) + s.expectMs;
}
await Promise.all(
  lanes.map(async (lane) => {
    for (const s of lane) {
      process.stderr.write(`[partitions] scenario ${s.id}: ${s.name}\n`);
      const r = await runOne(s);
      const verdict = `${r.ok ? 'ok' : 'FAIL'} in ${(r.ms / 1000).toFixed(1)} s`;
      process.stderr.write(`[partitions] scenario ${s.id}: ${verdict}\n`);
      results.push(r);
    }
  }),
);
results.sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
const totalMs = Math.round(performance.now() - started);
process.stdout.write(`\n${report(results)}\n\ntotal ${(totalMs / 1000).toFixed(1)} s\n`);
mkdirSync('.bench', { recursive: true });
writeFileSync(
  '.bench/partitions.json',
  `${JSON.stringify({ at: new Date().toISOString(), totalMs, ok: results.every((r) => r.ok), results }, null, 2)}\n`,
);
process.exit(results.length > 0 && results.every((r) => r.ok) ? 0 : 1);
