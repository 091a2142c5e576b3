// How the order bench runs its scenarios: warm-ups before a phase, interleaved rounds reported by
// their median, and a sell-out before the sold-out scenario.
import { ratio } from '../lib/stats.ts';
import { num } from '../lib/table.ts';
import type { BenchRun } from './bench-run.ts';
import { sellOut as sellOutSale } from './sales.ts';
import { runScenario, type ScenarioResult, type ScenarioSpec } from './scenario.ts';

const SELL_OUT_CLIENTS = 50;

/** The product of a repeated scenario in a round: the first round's own, later ones `-r<round>`. */
export const roundProduct = (productId: string, round: number) =>
  round === 1 ? productId : `${productId}-r${round}`;

/**
 * Runs the scenarios BENCH_REPEATS times, interleaved (a b a b …), so that a drift of the machine or
 * a noisy neighbour spreads over all of them instead of landing on one. Each scenario is then
 * reported by its median round (a real run: its latency, CPU and Redis figures belong together),
 * which the targets are judged on; the rounds' rates and their spread ((max - min) / median) are
 * printed.
 */
export async function repeatInterleaved(run: BenchRun, specs: ScenarioSpec[]): Promise<ScenarioResult[]> {
  const runs = new Map<string, ScenarioResult[]>(specs.map((s) => [s.key, []]));
  for (let round = 1; round <= run.options.repeats; round++) {
    for (const spec of specs) {
      const r = await runScenario(run, { ...spec, productId: roundProduct(spec.productId, round) });
      runs.get(spec.key)?.push(r);
    }
  }
  return [...runs].map(([key, rounds]) => medianRound(run, key, rounds));
}

function medianRound(run: BenchRun, key: string, rounds: ScenarioResult[]): ScenarioResult {
  const sorted = [...rounds].sort((x, y) => x.perSecond - y.perSecond);
  const median = sorted[Math.floor((sorted.length - 1) / 2)] as ScenarioResult;
  median.rounds = rounds.map((r) => r.perSecond);
  const spread = ratio((sorted.at(-1)?.perSecond ?? 0) - (sorted[0]?.perSecond ?? 0), median.perSecond);
  const rates = median.rounds.map((x) => num(x));
  median.notes.push(`median of ${rounds.length} rounds: ${rates.join(', ')}/s`);
  run.log(
    `  ${key.padEnd(6)} median ${num(median.perSecond)}/s of ${rounds.length} rounds (${rates.join(' ')}), spread ${(spread * 100).toFixed(1)} %`,
  );
  return median;
}

/** Short load to get the API process (and this one) past JIT warm-up; its orders are checked too. */
export async function warmUp(
  run: BenchRun,
  urls: string[],
  productId: string,
  paths: string[],
  check: ScenarioSpec['check'],
): Promise<void> {
  let acceptedBefore = 0;
  for (const path of paths) {
    const bare = path === '/bench/bare';
    const r = await runScenario(run, {
      key: `warm-${productId}`,
      label: 'warm-up',
      urls,
      path,
      productId,
      shards: 8,
      expectStatus: 202,
      check: bare ? 'none' : check,
      seconds: run.options.warmupSeconds,
      acceptedBefore,
      quiet: true,
    });
    if (!bare) acceptedBefore = r.accepted;
  }
}

/** Orders on `productId` until it answers sold out; returns how many were accepted. */
export async function sellOut(run: BenchRun, url: string, productId: string): Promise<number> {
  const { accepted, other } = await sellOutSale(url, productId, SELL_OUT_CLIENTS);
  if (Object.keys(other).length > 0)
    run.log(`  sell-out of ${productId}: other answers ${JSON.stringify(other)}`);
  return accepted;
}

/** The real path from 8 shards on `urls`, checked down to the rows: the spec most phases run. */
export function realPath(key: string, label: string, urls: string[], productId: string): ScenarioSpec {
  return { key, label, urls, path: '/api/orders', productId, shards: 8, expectStatus: 202, check: 'rows' };
}
