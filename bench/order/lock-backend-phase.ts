// The bench's lock-backend phase (issue 38's S1 load): a sale of 500 units on 8 shards and 3,000 buyers,
// 100 at a time, each honouring Retry-After (and queue tickets) up to 40 tries, against `npm start`
// (API + writer in one process) with LOCK_BACKEND=redis, etcd and zookeeper side by side, in
// interleaved rounds; beside each, its lock service's own put/create latency (lock-service-probe.ts).
//
// Environment: BENCH_LOCK_ROUNDS (interleaved rounds, default 3; the table shows their medians).
import os from 'node:os';
import { LOCK_SERVERS } from '../../harness/lock-servers.ts';
import { buyers } from '../../harness/s1-crowd.ts';
import { type Infra, spawnService } from '../../harness/service.ts';
import type { LockBackendName } from '../../src/inventory/shard-locks.ts';
import { environment, envNumber, writeJson } from '../lib/output.ts';
import { type Summary, summarize } from '../lib/stats.ts';
import { type Check, ms, num, printChecks, printTable, times } from '../lib/table.ts';
import { probeLockService, type ServiceSpeed } from './lock-service-probe.ts';
import { createSale } from './sales.ts';

const ROUNDS = Math.round(envNumber('BENCH_LOCK_ROUNDS', 3));
const STOCK = 500;
const SHARDS = 8;
/** Issue 38's target for etcd and ZooKeeper on 8 shards. */
export const MIN_ORDERS_PER_SEC = 300;

export interface LockBackendRun {
  backend: LockBackendName;
  round: number;
  loadavg: number;
  /** Units sold (202s) of STOCK. */
  sold: number;
  /** 202s per second, from the first order to the last 202. */
  ordersPerSec: number;
  latencyMs: Summary;
  /** Every answer by "status error", and each buyer's last answer. */
  answers: Record<string, number>;
  fates: Record<string, number>;
}

export interface LockBackendRow {
  backend: LockBackendName;
  ordersPerSec: number;
  p99Ms: number;
  busy: number;
  /** Every other refusal (429 queued, 503 unavailable), which the buyers came back from. */
  otherRefusals: number;
  /** The fewest units any round sold. */
  minSold: number;
  service?: ServiceSpeed;
}

export interface LockBackendPhaseResult {
  runs: LockBackendRun[];
  rows: LockBackendRow[];
  checks: Check[];
}

const median = (values: number[]) => summarize(values).p50;

/** One S1 sale against a fresh `npm start` process with LOCK_BACKEND=`backend`. */
async function s1(infra: Infra, backend: LockBackendName, env: Record<string, string>, round: number) {
  const service = await spawnService(infra, 'main', { LOCK_BACKEND: backend, LOG_LEVEL: 'warn', ...env });
  try {
    const productId = `bench-s1-${backend}-${round}`;
    await createSale(service.url, productId, STOCK, SHARDS);
    const loadavg = os.loadavg()[0] ?? 0;
    const r = await buyers({ url: service.url, productId, userPrefix: productId });
    const sold = r.fates['202'] ?? 0;
    const run: LockBackendRun = {
      backend,
      round,
      loadavg,
      sold,
      ordersPerSec: r.sellMs > 0 ? (sold * 1000) / r.sellMs : 0,
      latencyMs: summarize(r.latencies),
      answers: r.answers,
      fates: r.fates,
    };
    return run;
  } finally {
    await service.stop();
  }
}

/** Runs the phase on `infra` (Redis and Postgres), starting its own etcd and ZooKeeper. */
export async function lockBackendPhase(
  infra: Infra,
  log: (line: string) => void,
): Promise<LockBackendPhaseResult> {
  const servers = await Promise.all(
    LOCK_SERVERS.map(async (s) => ({ name: s.name, server: await s.start() })),
  );
  const runs: LockBackendRun[] = [];
  const speeds = new Map<LockBackendName, ServiceSpeed>();
  try {
    const backends = [
      { name: 'redis' as const, env: {} },
      ...servers.map((s) => ({ name: s.name, env: s.server.env })),
    ];
    for (let round = 1; round <= ROUNDS; round++) {
      for (const b of backends) {
        log(`lock-backend phase: round ${round}/${ROUNDS}, S1 sale with LOCK_BACKEND=${b.name}`);
        const run = await s1(infra, b.name, b.env, round);
        runs.push(run);
        const busy = run.answers['429 busy'] ?? 0;
        log(
          `  ${run.sold} sold, ${num(run.ordersPerSec)} orders/s, p99 ${ms(run.latencyMs.p99)} ms, ${busy} busy`,
        );
      }
    }
    for (const { name, server } of servers) {
      const address = server.env.ETCD_ENDPOINTS ?? server.env.ZOOKEEPER_CONNECT ?? '';
      speeds.set(name, await probeLockService(name, address));
    }
  } finally {
    await Promise.all(servers.map((s) => s.server.stop()));
  }
  const rows = (['redis', 'etcd', 'zookeeper'] as const).map((backend) =>
    row(backend, runs, speeds.get(backend)),
  );
  const result = { runs, rows, checks: checks(rows) };
  writeJson('lock-backend-phase', { environment: environment({ loadavgAtEnd: os.loadavg() }), ...result });
  return result;
}

function row(backend: LockBackendName, all: LockBackendRun[], service?: ServiceSpeed): LockBackendRow {
  const runs = all.filter((r) => r.backend === backend);
  const answered = (r: LockBackendRun, key: string) => r.answers[key] ?? 0;
  return {
    backend,
    ordersPerSec: median(runs.map((r) => r.ordersPerSec)),
    p99Ms: median(runs.map((r) => r.latencyMs.p99)),
    busy: runs.reduce((n, r) => n + answered(r, '429 busy'), 0),
    otherRefusals: runs.reduce(
      (n, r) =>
        n + answered(r, '429 queued') + answered(r, '503 unavailable') + answered(r, '429 rate_limited'),
      0,
    ),
    minSold: Math.min(...runs.map((r) => r.sold)),
    service,
  };
}

function checks(rows: LockBackendRow[]): Check[] {
  const found: Check[] = [];
  for (const r of rows) {
    found.push({
      name: `${r.backend}: every unit sold, each round`,
      pass: r.minSold === STOCK,
      detail: `fewest ${r.minSold} of ${STOCK}`,
    });
    found.push({
      name: `${r.backend}: no 429 busy`,
      pass: r.busy === 0,
      detail: `${r.busy} over ${ROUNDS} rounds`,
    });
    if (r.backend !== 'redis') {
      found.push({
        name: `${r.backend}: >= ${MIN_ORDERS_PER_SEC} orders/s on ${SHARDS} shards (median)`,
        pass: r.ordersPerSec >= MIN_ORDERS_PER_SEC,
        detail: `${num(r.ordersPerSec)} orders/s`,
      });
    }
  }
  return found;
}

/** Prints the side-by-side table and the checks; returns the checks. */
export function reportLockBackendPhase({ rows, runs }: LockBackendPhaseResult): Check[] {
  const redis = rows.find((r) => r.backend === 'redis')?.ordersPerSec ?? Number.NaN;
  const loads = runs.map((r) => r.loadavg.toFixed(1)).join(' ');
  printTable(
    `Lock backends under the S1 sale (${STOCK} units, ${SHARDS} shards, 3,000 buyers 100 at a time; medians of ${ROUNDS} interleaved rounds; load average at each start: ${loads})`,
    [
      { header: 'LOCK_BACKEND', value: (r: LockBackendRow) => r.backend, align: 'left' },
      { header: 'orders/s', value: (r) => num(r.ordersPerSec) },
      { header: 'x Redis', value: (r) => times(r.ordersPerSec / redis) },
      { header: 'p99 ms', value: (r) => ms(r.p99Ms) },
      { header: '429 busy', value: (r) => num(r.busy) },
      { header: 'other refusals', value: (r) => num(r.otherRefusals) },
      { header: 'sold (fewest)', value: (r) => num(r.minSold) },
      { header: 'service put/create p50 ms', value: (r) => (r.service ? ms(r.service.takeMs.p50) : '') },
      { header: 'p99 ms', value: (r) => (r.service ? ms(r.service.takeMs.p99) : '') },
      { header: 'lock+unlock/s, 8 loops', value: (r) => (r.service ? num(r.service.cyclesPerSec8) : '') },
    ],
    rows,
  );
  const found = checks(rows);
  printChecks('Lock backends: issue 38 targets', found);
  return found;
}
