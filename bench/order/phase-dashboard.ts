// Phase 2c, a step of the suite: the real path from 8 shards without (c8w) and with (c8p) the live
// dashboard watched (GET /admin/products/:id/live once a second on the product under load).
import { admin } from '../../harness/service.ts';
import { ratio } from '../lib/stats.ts';
import { type Check, ms, num } from '../lib/table.ts';
import type { BenchRun } from './bench-run.ts';
import { type PollStats, pollDashboard } from './dashboard.ts';
import { atLeast } from './judge.ts';
import { TARGETS } from './options.ts';
import { realPath } from './rounds.ts';
import { runScenario, type ScenarioResult } from './scenario.ts';

/** In the order c8w1 c8p1 c8p2 c8w2, so that a drift of the machine over the phase cancels out. */
const SLICES = ['c8w1', 'c8p1', 'c8p2', 'c8w2'];

async function slice(bench: BenchRun, url: string, key: string): Promise<ScenarioResult> {
  const polled = key.startsWith('c8p');
  const productId = `bench-${key}`;
  let polls: PollStats | undefined;
  const label = `real path, 8 shards, ${polled ? 'dashboard polled 1/s' : 'no dashboard'}`;
  const result = await runScenario(bench, {
    ...realPath(key, label, [url], productId),
    during: polled
      ? async (load) => {
          polls = await pollDashboard({
            url,
            productId,
            headers: admin,
            until: load.deadline,
            everyMs: 1000,
          });
        }
      : undefined,
  });
  if (polls) {
    const failed = polls.failed ? `, ${polls.failed} FAILED` : '';
    bench.log(`         ${polls.polls} polls, slowest ${ms(polls.maxMs)} ms${failed}`);
    if (polls.failed > 0)
      bench.record([
        { scenario: key, check: 'dashboard polls answer 200', detail: `${polls.failed} failed` },
      ]);
  }
  return result;
}

export async function dashboardSlices(bench: BenchRun, url: string): Promise<ScenarioResult[]> {
  bench.log(
    'phase 2c: real path without (c8w) and with (c8p) a dashboard poller (1 poll/s of the live JSON)',
  );
  const results: ScenarioResult[] = [];
  for (const key of SLICES) results.push(await slice(bench, url, key));
  return results;
}

/** c8p/c8w: orders/s with the dashboard watched over without, each the mean of its two slices. */
export function dashboardCheck(rate: (key: string) => number): Check {
  const w = (rate('c8w1') + rate('c8w2')) / 2;
  const p = (rate('c8p1') + rate('c8p2')) / 2;
  const name = 'c8p/c8w (orders/s, dashboard polled 1/s / not)';
  return atLeast(name, ratio(p, w), TARGETS.dashboard, `${num(p)} / ${num(w)}`);
}
