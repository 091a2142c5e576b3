// `npm run loadtest:local -- <scenario> [--duration 20] [--rate N] [--stock N] [--shards N] ...`
//
// The k6 scenarios of this directory (flash-sale, reshard-under-load, sold-out-storm, soak) for
// machines without k6: the same shapes, variables and end-of-run checks, with autocannon as the
// load generator. Unless BASE_URL is given, the run starts its own private stack (redis-server on
// a free port, a fresh Postgres database, the service as a child process) and removes it after.
// `ci` runs short, bounded flash-sale and reshard-under-load runs for CI (`npm run loadtest:ci`).
//
// Every variable of loadtest/README.md works, from the environment or as a --kebab-case flag
// (flags win). Exit code: 0 when every check passed, 1 when one failed, 2 on bad usage or when
// the run could not start.
import { setMaxListeners } from 'node:events';
import { writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { buyers, Recorder } from './local/load.ts';
import { parseArgs, UsageError, Vars } from './local/options.ts';
import { latencyStats, phaseStats, render } from './local/report.ts';
import { SCENARIOS } from './local/scenarios.ts';
import { adminCall, startTarget, type Target, waitForReady } from './local/target.ts';
import { type Check, serverChecks, waitForDrain } from './local/verify.ts';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');

/** `ci`: short runs sized for a 2-core machine with nothing else running; ~20 s of load each. */
const CI_RUNS: { scenario: string; vars: Record<string, string> }[] = [
  {
    scenario: 'flash-sale',
    // Demand ~2,500 for 1,500 units: sells out two thirds in, so sold-out answers are covered too.
    vars: { RATE: '150', RAMP: '3s', DURATION: '14s', STOCK: '1500', SHARDS: '8', DRAIN_TIMEOUT: '30' },
  },
  {
    scenario: 'reshard-under-load',
    vars: {
      RATE: '120',
      RAMP: '3s',
      DURATION: '14s',
      STOCK: '1800',
      SHARDS: '8',
      RESHARD_EVERY: '2',
      MAX_SHARDS: '16',
      DRAIN_TIMEOUT: '30',
    },
  },
];

function uniqueProductId(prefix: string): string {
  const stamp = Date.now().toString(36);
  const salt = Math.floor(Math.random() * 1679616)
    .toString(36)
    .padStart(4, '0');
  return `lt-${prefix}-${stamp}-${salt}`.slice(0, 64);
}

async function runScenario(
  name: string,
  raw: Record<string, string>,
  interrupted: AbortSignal,
): Promise<boolean> {
  const scenario = SCENARIOS[name];
  if (!scenario)
    throw new UsageError(
      `unknown scenario "${name}" (flash-sale, reshard-under-load, sold-out-storm, soak, ci)`,
    );
  const vars = new Vars(raw);
  const { stock, shards } = scenario.sizing(vars);
  const drainTimeoutSec = vars.int('DRAIN_TIMEOUT', 120);
  const enforceThresholds = vars.bool('THRESHOLDS', false);
  const productIdVar = vars.string('PRODUCT_ID', '');
  if (productIdVar !== '' && !/^[A-Za-z0-9_-]{1,64}$/.test(productIdVar)) {
    throw new UsageError(`PRODUCT_ID must match ^[A-Za-z0-9_-]{1,64}$, got "${productIdVar}"`);
  }
  const perUserLimit = vars.has('PER_USER_LIMIT') ? vars.int('PER_USER_LIMIT', 1) : undefined;
  const connections = vars.has('CONNECTIONS') ? vars.int('CONNECTIONS', 1) : undefined;
  const plannedSec = scenario.plannedSec(vars);
  // The whole run is bounded: load (twice its plan), the drain, and a minute for the rest.
  const boundSec = plannedSec * 2 + drainTimeoutSec + 60;

  const baseUrl = vars.string('BASE_URL', '');
  console.log(
    `\n${name}: starting ${baseUrl ? `against ${baseUrl}` : 'a private stack (redis-server, Postgres database, service)'}`,
  );
  const target: Target = await startTarget({ baseUrl, adminToken: vars.string('ADMIN_TOKEN', '') });
  const controller = new AbortController();
  // Every autocannon instance and pause of the run listens to it.
  setMaxListeners(0, controller.signal);
  const onInterrupt = () => controller.abort(new Error('interrupted'));
  interrupted.addEventListener('abort', onInterrupt, { once: true });
  const bound = setTimeout(
    () => controller.abort(new Error(`run exceeded its bound of ${boundSec}s`)),
    boundSec * 1000,
  );
  try {
    await waitForReady(target, vars.int('READY_TIMEOUT', 60));
    const productId = productIdVar || uniqueProductId(scenario.prefix);
    const body: Record<string, number> = { stock, shards };
    if (perUserLimit !== undefined) body.perUserLimit = perUserLimit;
    const put = await adminCall(target, 'PUT', `/admin/products/${productId}`, body);
    if (put.status === 401 || put.status === 403)
      throw new Error(`admin API refused ADMIN_TOKEN (${put.status})`);
    if (put.status !== 200 && put.status !== 201) {
      throw new Error(`could not create sale ${productId}: ${put.status} ${put.text.slice(0, 300)}`);
    }
    const sale = `${productId}: stock ${stock} on ${shards} shards`;
    console.log(`${name}: sale ${sale} at ${target.baseUrl}; load for ~${Math.round(plannedSec)}s`);

    // A service we just started is cold (JIT, connection pools, the writer's first batches): a few
    // seconds of orders on another product first, so the scenario measures a warm service.
    const warmupSec = vars.duration('WARMUP', baseUrl ? 0 : 3);
    if (warmupSec > 0) {
      const warmupId = uniqueProductId('warmup');
      const rate = Math.min(vars.int('RATE', 50), 50);
      await adminCall(target, 'PUT', `/admin/products/${warmupId}`, { stock: 1_000_000, shards });
      const rec = new Recorder('warmup', Date.now());
      await buyers(
        [{ rate, seconds: warmupSec }],
        {
          baseUrl: target.baseUrl,
          productId: warmupId,
          userPrefix: `warmup-${Date.now().toString(36)}`,
          idempotency: true,
          signal: controller.signal,
        },
        rec,
      );
      if (rec.outcomes.accepted === 0)
        throw new Error(`warm-up orders failed: ${[...rec.statuses].join(' ')} ${rec.samples.join(' | ')}`);
    }

    const epoch = Date.now();
    const runId = epoch.toString(36);
    const result = await scenario.run({
      target,
      vars,
      productId,
      runId,
      stock,
      idempotency: vars.bool('IDEMPOTENCY', true),
      connections,
      signal: controller.signal,
      recorder: (phase) => new Recorder(phase, epoch),
    });
    const view = await waitForDrain(target, productId, drainTimeoutSec);

    // What the client saw, against the server's numbers.
    const sum = (f: (r: Recorder) => number) => result.phases.reduce((a, r) => a + f(r), 0);
    const accepted = sum((r) => r.outcomes.accepted);
    const unexpected = sum((r) => r.outcomes.unexpected);
    const fiveXX = sum((r) => [...r.statuses].reduce((a, [code, n]) => a + (code >= 500 ? n : 0), 0));
    const exited = target.exited();
    const rows = await target.rows(productId);
    const errorLines = target.errorLines();
    const checks: Check[] = [
      ...(controller.signal.aborted
        ? [{ name: 'run completed', ok: false, detail: String((controller.signal.reason as Error)?.message) }]
        : []),
      ...(baseUrl
        ? []
        : [{ name: 'the service stayed up', ok: exited === null, detail: exited ?? undefined }]),
      { name: 'no 5xx answers', ok: fiveXX === 0, detail: `${fiveXX}` },
      {
        name: 'no answer outside the contract (unexpected == 0)',
        ok: unexpected === 0,
        detail: `${unexpected}`,
      },
      {
        name: `no oversell seen by the client: 202s (${accepted}) <= units put on sale (${result.totalPutOnSale})`,
        ok: accepted <= result.totalPutOnSale,
      },
      rows === null
        ? {
            name: `every 202 is a confirmed unit: server confirmed == 202s seen (${accepted})`,
            ok: view.state?.confirmed === accepted,
            detail: `confirmed ${view.state?.confirmed}`,
          }
        : {
            name: `every 202 is one row in Postgres: rows == 202s seen (${accepted})`,
            ok: rows === accepted,
            detail: `rows ${rows}`,
          },
      ...serverChecks(view, { total: result.totalPutOnSale, soldOut: result.soldOut, drainTimeoutSec }),
      ...result.checks,
      ...(errorLines === null
        ? []
        : [
            {
              name: 'the service logged no error',
              ok: errorLines.length === 0,
              detail: errorLines.slice(0, 3).join('\n      '),
            },
          ]),
    ];
    const thresholds: Check[] = [];
    const p95Bound = vars.number('P95_MS', 250);
    const p99Bound = vars.number('P99_MS', 500);
    const lat = latencyStats(result.phases.flatMap((r) => r.acceptedMs));
    const fmt = (v: number | undefined) => (v === undefined ? 'no 202s' : `${v.toFixed(1)}ms`);
    thresholds.push(
      {
        name: `p95 of 202s < ${p95Bound}ms`,
        ok: lat.p95 === undefined || lat.p95 < p95Bound,
        detail: fmt(lat.p95),
      },
      {
        name: `p99 of 202s < ${p99Bound}ms`,
        ok: lat.p99 === undefined || lat.p99 < p99Bound,
        detail: fmt(lat.p99),
      },
    );
    for (const r of result.phases) {
      const lag = r.plannedSec ? r.elapsedSec / r.plannedSec - 1 : 0;
      thresholds.push({
        name: `${r.name}: the schedule held (ran at most 10% over its planned ${r.plannedSec.toFixed(0)}s)`,
        ok: lag <= 0.1,
        detail: `${r.elapsedSec.toFixed(1)}s, ${lag >= 0 ? '+' : ''}${Math.round(lag * 100)}%`,
      });
    }
    if (vars.has('MAX_BUSY_RATE')) {
      const busy =
        sum((r) => r.outcomes.busy) /
        Math.max(
          1,
          sum((r) => r.answered),
        );
      // Opt-in like in k6: when set, it is enforced.
      checks.push({
        name: `busy share <= MAX_BUSY_RATE ${vars.number('MAX_BUSY_RATE', 1)}`,
        ok: busy <= vars.number('MAX_BUSY_RATE', 1),
        detail: `${(busy * 100).toFixed(2)}%`,
      });
    }
    thresholds.push(...result.thresholds);

    const failed = checks.some((c) => !c.ok) || (enforceThresholds && thresholds.some((c) => !c.ok));
    const report = {
      scenario: name,
      target: baseUrl ? baseUrl : `${target.baseUrl} (private stack)`,
      sale,
      result,
      view,
      checks,
      thresholds,
      enforceThresholds,
      failed,
    };
    console.log(render(report));
    if (failed && !baseUrl) console.log(`  service output (last lines):\n${target.outputTail(20)}\n`);
    const dir = resolve(ROOT, vars.string('SUMMARY_DIR', 'loadtest'));
    const file = join(dir, `${name}.local.summary.json`);
    try {
      writeFileSync(
        file,
        `${JSON.stringify(
          {
            scenario: name,
            passed: !failed,
            productId,
            vars: Object.fromEntries(
              Object.entries(raw).filter(
                ([k]) => /^[A-Z][A-Z0-9_]*$/.test(k) && k !== 'ADMIN_TOKEN' && KNOWN.has(k),
              ),
            ),
            phases: result.phases.map((p) => ({ name: p.name, ...phaseStats(p) })),
            server: view.state,
            reconcile: view.reconcile.body,
            checks,
            thresholds,
          },
          null,
          2,
        )}\n`,
      );
      console.log(`  summary written to ${file}`);
    } catch (err) {
      console.warn(`  could not write ${file}: ${(err as Error).message}`);
    }
    return !failed;
  } finally {
    clearTimeout(bound);
    interrupted.removeEventListener('abort', onInterrupt);
    await target.stop().catch((err: unknown) => console.warn(`stopping the stack failed: ${String(err)}`));
  }
}

const KNOWN = new Set(
  'BASE_URL STOCK SHARDS RATE DURATION RAMP PRODUCT_ID PER_USER_LIMIT IDEMPOTENCY P95_MS P99_MS MAX_BUSY_RATE DRAIN_TIMEOUT READY_TIMEOUT SUMMARY_DIR RESHARD_EVERY MAX_SHARDS RESHARD_P95_MS RUSH_RATE RUSH_DURATION SOLDOUT_P95_MS SOLDOUT_P99_MS MIN_SOLD_OUT_RATE RESTOCK_EVERY RESTOCK PHASE_WINDOW LATE_P99_MS MAX_DRIFT MIN_BASELINE CONNECTIONS THRESHOLDS WARMUP'.split(
    ' ',
  ),
);

async function main(): Promise<number> {
  process.chdir(ROOT);
  const interrupt = new AbortController();
  const onSignal = () => {
    if (interrupt.signal.aborted) process.exit(130);
    console.error('\ninterrupted: stopping the load and the stack (again to force)');
    interrupt.abort();
  };
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);
  let options: ReturnType<typeof parseArgs>;
  try {
    options = parseArgs(process.argv.slice(2));
  } catch (err) {
    console.error(
      `${(err as Error).message}\nusage: npm run loadtest:local -- <flash-sale|reshard-under-load|sold-out-storm|soak|ci> [--duration 20] [--rate N] [--stock N] [--shards N] [--thresholds]`,
    );
    return 2;
  }
  const runs =
    options.scenario === 'ci'
      ? CI_RUNS.map((r) => ({ scenario: r.scenario, vars: { ...options.env, ...r.vars, ...options.flags } }))
      : [{ scenario: options.scenario, vars: { ...options.env, ...options.flags } }];
  const results: [string, boolean][] = [];
  for (const run of runs) {
    if (interrupt.signal.aborted) break;
    try {
      results.push([run.scenario, await runScenario(run.scenario, run.vars, interrupt.signal)]);
    } catch (err) {
      console.error(
        `${run.scenario}: ${err instanceof UsageError ? '' : 'could not run: '}${(err as Error).message}`,
      );
      return 2;
    }
  }
  if (interrupt.signal.aborted) return 130;
  if (runs.length > 1) console.log(results.map(([s, ok]) => `${ok ? '✓' : '✗'} ${s}`).join('\n'));
  return results.every(([, ok]) => ok) ? 0 : 1;
}

process.exit(await main());
