// `npm run test:faults`: the fault-injection suite. Runs every scenario on its own private
// infrastructure (private redis-server, fresh Postgres database or private Postgres cluster, service
// processes spawned and killed by the scenario), prints a table of what each did and found, writes
// .bench/faults.json, and exits 1 if any invariant broke (or a scenario could not run).
//
//   tsx test/faults/run.ts            all scenarios
//   tsx test/faults/run.ts 1 5        only scenarios 1 and 5 (also FAULTS=1,5)
//   FAULTS_SKIP=5b tsx test/faults/run.ts   all but 5b
//   FAULTS_LANES=1 tsx test/faults/run.ts    one scenario at a time (default: two side by side)
import type { ScenarioResult } from './lib.ts';
import { runSuite, type Scenario } from './runner.ts';
import { apiKill } from './s1-api-kill.ts';
import { handOffKill } from './s1b-handoff-kill.ts';
import { writerKill } from './s2-writer-kill.ts';
import { postgresDown } from './s3-postgres-down.ts';
import { fencing } from './s4-fencing.ts';
import { redisKill, redisReplyLost } from './s5-redis-kill.ts';
import { duplicates } from './s6-idempotency.ts';
import { fuzz } from './s7-fuzz.ts';
import { payOrExpire } from './s8-pay-or-expire.ts';

const SCENARIOS: Scenario[] = [
  { id: '1', name: 'API kill -9 ×5 under load', run: apiKill, timeoutMs: 150_000, expectMs: 30_000 },
  {
    id: '1b',
    name: 'API kill -9 ×3 while batches form',
    run: handOffKill,
    timeoutMs: 150_000,
    expectMs: 30_000,
  },
  { id: '2', name: 'writer kill -9 ×3 mid-batch', run: writerKill, timeoutMs: 180_000, expectMs: 30_000 },
  { id: '3', name: 'Postgres down 20 s under load', run: postgresDown, timeoutMs: 180_000, expectMs: 60_000 },
  { id: '4', name: 'frozen lock holder fenced off', run: fencing, timeoutMs: 120_000, expectMs: 15_000 },
  { id: '5', name: 'Redis (AOF always) kill -9 ×3', run: redisKill, timeoutMs: 150_000, expectMs: 40_000 },
  {
    id: '5b',
    name: 'Redis connections cut, replies in flight ×5',
    run: redisReplyLost,
    timeoutMs: 120_000,
    expectMs: 20_000,
  },
  {
    id: '6',
    name: 'same Idempotency-Key ×50 concurrently',
    run: duplicates,
    timeoutMs: 90_000,
    expectMs: 10_000,
  },
  { id: '7', name: 'fuzz: bad requests on every endpoint', run: fuzz, timeoutMs: 150_000, expectMs: 10_000 },
  {
    id: '8',
    name: 'pay or expire: Postgres down, worker and API kill -9',
    run: payOrExpire,
    timeoutMs: 240_000,
    expectMs: 40_000,
  },
];

function table(results: ScenarioResult[]): string {
  const head = [
    '#',
    'scenario',
    'sent',
    '202',
    'rows',
    'lost',
    'doubled',
    'orphans',
    'no answer',
    'oversold',
    'time',
    'result',
  ];
  const lines = results.map((r) => [
    r.id,
    r.name,
    String(r.sent),
    String(r.accepted),
    String(r.rows),
    String(r.lost),
    String(r.doubled),
    String(r.orphans),
    String(r.noAnswer),
    String(r.oversold),
    `${(r.ms / 1000).toFixed(1)} s`,
    r.ok ? 'ok' : 'FAIL',
  ]);
  const widths = head.map((h, c) => Math.max(h.length, ...lines.map((l) => (l[c] as string).length)));
  const fmt = (cells: string[]) =>
    cells
      .map((cell, c) => (c <= 1 ? cell.padEnd(widths[c] as number) : cell.padStart(widths[c] as number)))
      .join('  ');
  const out = [
    fmt(head),
    widths.map((w) => '-'.repeat(w)).join('  '),
    ...lines.map(fmt),
    '',
    'sent: logical orders (or requests); 202: order ids the clients were given; rows: Postgres rows;',
    'lost: 202s without a row; doubled: ids, or logical orders (one user + Idempotency-Key), with more than one row;',
    'orphans: rows no client was told about, allowed only up to "no answer" (requests cut by a fault or answered 5xx,',
    'which may or may not have placed an order); oversold: units beyond the stock on sale.',
  ];
  for (const r of results) {
    out.push('');
    out.push(`${r.id}. ${r.name}: ${r.faults || '(no faults injected)'}`);
    for (const f of r.failures) out.push(`   FAIL  ${f}`);
    for (const n of r.notes) out.push(`   note  ${n}`);
  }
  return out.join('\n');
}

// Scenarios run two side by side (FAULTS_LANES): much of the suite is waiting (Postgres down for
// 20 s, BullMQ's stalled-job check after a writer crash), and every scenario has its own Redis,
// database and processes, so they do not see each other.
await runSuite({ suite: 'faults', scenarios: SCENARIOS, env: 'FAULTS', report: table });
