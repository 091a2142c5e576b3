// One scenario of `npm run loadtest:local`: its settings from the variables, the stack (or BASE_URL),
// the sale and a warm-up, the load itself under a time bound, then the drain, the verdict and summary.
import { setMaxListeners } from 'node:events';
import { buyers, Recorder } from './load.ts';
import { UsageError, Vars } from './options.ts';
import { render } from './report.ts';
import { runChecks, thresholds } from './run-checks.ts';
import { SCENARIOS, type Scenario } from './scenarios.ts';
import { writeSummary } from './summary.ts';
import { adminCall, startTarget, type Target, waitForReady } from './target.ts';
import { waitForDrain } from './verify.ts';

function uniqueProductId(prefix: string): string {
  const stamp = Date.now().toString(36);
  const salt = Math.floor(Math.random() * 1679616)
    .toString(36)
    .padStart(4, '0');
  return `lt-${prefix}-${stamp}-${salt}`.slice(0, 64);
}

/** The run's settings, checked before anything starts. */
function settings(name: string, vars: Vars) {
  const scenario: Scenario | undefined = SCENARIOS[name];
  if (!scenario)
    throw new UsageError(
      `unknown scenario "${name}" (flash-sale, reshard-under-load, sold-out-storm, soak, ci)`,
    );
  const productId = vars.string('PRODUCT_ID', '');
  if (productId !== '' && !/^[A-Za-z0-9_-]{1,64}$/.test(productId))
    throw new UsageError(`PRODUCT_ID must match ^[A-Za-z0-9_-]{1,64}$, got "${productId}"`);
  const drainTimeoutSec = vars.int('DRAIN_TIMEOUT', 120);
  const plannedSec = scenario.plannedSec(vars);
  return {
    scenario,
    ...scenario.sizing(vars),
    productId,
    drainTimeoutSec,
    plannedSec,
    // The whole run is bounded: load (twice its plan), the drain, and a minute for the rest.
    boundSec: plannedSec * 2 + drainTimeoutSec + 60,
    perUserLimit: vars.has('PER_USER_LIMIT') ? vars.int('PER_USER_LIMIT', 1) : undefined,
    connections: vars.has('CONNECTIONS') ? vars.int('CONNECTIONS', 1) : undefined,
    baseUrl: vars.string('BASE_URL', ''),
  };
}

type Settings = ReturnType<typeof settings>;

async function createSale(target: Target, productId: string, body: Record<string, number>): Promise<void> {
  const put = await adminCall(target, 'PUT', `/admin/products/${productId}`, body);
  if (put.status === 401 || put.status === 403)
    throw new Error(`admin API refused ADMIN_TOKEN (${put.status})`);
  if (put.status !== 200 && put.status !== 201)
    throw new Error(`could not create sale ${productId}: ${put.status} ${put.text.slice(0, 300)}`);
}

/**
 * A service we just started is cold (JIT, connection pools, the writer's first batches): a few
 * seconds of orders on another product first, so the scenario measures a warm service.
 */
async function warmUp(target: Target, vars: Vars, s: Settings, signal: AbortSignal): Promise<void> {
  const warmupSec = vars.duration('WARMUP', s.baseUrl ? 0 : 3);
  if (warmupSec <= 0) return;
  const productId = uniqueProductId('warmup');
  await adminCall(target, 'PUT', `/admin/products/${productId}`, { stock: 1_000_000, shards: s.shards });
  const rec = new Recorder('warmup', Date.now());
  const userPrefix = `warmup-${Date.now().toString(36)}`;
  const rate = Math.min(vars.int('RATE', 50), 50);
  await buyers(
    [{ rate, seconds: warmupSec }],
    { baseUrl: target.baseUrl, productId, userPrefix, idempotency: true, signal },
    rec,
  );
  if (rec.outcomes.accepted === 0)
    throw new Error(`warm-up orders failed: ${[...rec.statuses].join(' ')} ${rec.samples.join(' | ')}`);
}

/** The sale, the warm-up, the scenario's load and the drain. */
async function load(name: string, vars: Vars, s: Settings, target: Target, signal: AbortSignal) {
  await waitForReady(target, vars.int('READY_TIMEOUT', 60));
  const productId = s.productId || uniqueProductId(s.scenario.prefix);
  const limit = s.perUserLimit !== undefined && { perUserLimit: s.perUserLimit };
  await createSale(target, productId, { stock: s.stock, shards: s.shards, ...limit });
  const sale = `${productId}: stock ${s.stock} on ${s.shards} shards`;
  console.log(`${name}: sale ${sale} at ${target.baseUrl}; load for ~${Math.round(s.plannedSec)}s`);
  await warmUp(target, vars, s, signal);
  const epoch = Date.now();
  const result = await s.scenario.run({
    target,
    vars,
    productId,
    runId: epoch.toString(36),
    stock: s.stock,
    idempotency: vars.bool('IDEMPOTENCY', true),
    connections: s.connections,
    signal,
    recorder: (phase) => new Recorder(phase, epoch),
  });
  const view = await waitForDrain(target, productId, s.drainTimeoutSec);
  return { productId, sale, result, view };
}

/** The run and its verdict, printed and written to the summary; true when it passed. */
async function measured(
  run: { name: string; raw: Record<string, string>; root: string },
  vars: Vars,
  s: Settings,
  target: Target,
  signal: AbortSignal,
) {
  const { productId, sale, result, view } = await load(run.name, vars, s, target, signal);
  const aborted = signal.aborted ? (signal.reason as Error) : undefined;
  const external = s.baseUrl !== '';
  const checks = await runChecks(
    { result, view, target, productId, external, aborted, drainTimeoutSec: s.drainTimeoutSec },
    vars,
  );
  const limits = thresholds(result, vars);
  const enforceThresholds = vars.bool('THRESHOLDS', false);
  const failed = checks.some((c) => !c.ok) || (enforceThresholds && limits.some((c) => !c.ok));
  const where = external ? s.baseUrl : `${target.baseUrl} (private stack)`;
  const report = { scenario: run.name, target: where, sale, result, view, checks, thresholds: limits };
  console.log(render({ ...report, enforceThresholds, failed }));
  if (failed && !external) console.log(`  service output (last lines):\n${target.outputTail(20)}\n`);
  const summary = {
    name: run.name,
    passed: !failed,
    productId,
    raw: run.raw,
    result,
    view,
    checks,
    thresholds: limits,
  };
  writeSummary(run.root, vars.string('SUMMARY_DIR', 'loadtest'), summary);
  return !failed;
}

/** Runs one scenario; true when every check passed. `root` is the repository's. */
export async function runScenario(
  name: string,
  raw: Record<string, string>,
  interrupted: AbortSignal,
  root: string,
): Promise<boolean> {
  const vars = new Vars(raw);
  const s = settings(name, vars);
  const where = s.baseUrl
    ? `against ${s.baseUrl}`
    : 'a private stack (redis-server, Postgres database, service)';
  console.log(`\n${name}: starting ${where}`);
  const target = await startTarget({ baseUrl: s.baseUrl, adminToken: vars.string('ADMIN_TOKEN', '') });
  const controller = new AbortController();
  // Every autocannon instance and pause of the run listens to it.
  setMaxListeners(0, controller.signal);
  const onInterrupt = () => controller.abort(new Error('interrupted'));
  interrupted.addEventListener('abort', onInterrupt, { once: true });
  const bound = setTimeout(
    () => controller.abort(new Error(`run exceeded its bound of ${s.boundSec}s`)),
    s.boundSec * 1000,
  );
  try {
    return await measured({ name, raw, root }, vars, s, target, controller.signal);
  } finally {
    clearTimeout(bound);
    interrupted.removeEventListener('abort', onInterrupt);
    await target.stop().catch((err: unknown) => console.warn(`stopping the stack failed: ${String(err)}`));
  }
}
