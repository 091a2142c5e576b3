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
import type { ScenarioResult } from '../faults/lib.ts';
import { runSuite, type Scenario } from '../faults/runner.ts';
import { clusterMasterCut } from './a-cluster.ts';
import { pauseHolder } from './b-pause.ts';
import { clockStep } from './c-clock.ts';
import { lockServiceCut } from './d-lock-service.ts';
import { sweepLeftovers, unsupported } from './netns.ts';

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
sweepLeftovers();
// Scenarios run two side by side (PARTITIONS_LANES): d1 and d2 spend most of their time waiting for a
// session to expire, and each scenario has its own network and stores.
await runSuite({ suite: 'partitions', scenarios: SCENARIOS, env: 'PARTITIONS', report });
