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
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs, UsageError } from './local/options.ts';
import { runScenario } from './local/run.ts';

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
      results.push([run.scenario, await runScenario(run.scenario, run.vars, interrupt.signal, ROOT)]);
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
