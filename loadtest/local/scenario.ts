// What a scenario of `npm run loadtest:local` is (a k6 script's shape, run from Node) and what its
// runs share: the buyers' options, the herd of RATE/RAMP/DURATION, admin loops on a schedule.
import { setTimeout as sleep } from 'node:timers/promises';
import { herd, type Recorder, type Segment } from './load.ts';
import type { Vars } from './options.ts';
import type { Target } from './target.ts';
import type { Check } from './verify.ts';

export interface Sizing {
  stock: number;
  shards: number;
}

export interface RunContext {
  target: Target;
  vars: Vars;
  productId: string;
  runId: string;
  stock: number;
  idempotency: boolean;
  connections: number | undefined;
  signal: AbortSignal;
  /** A Recorder for a phase of buyers (all phases share the run's clock). */
  recorder(name: string): Recorder;
}

export interface ScenarioResult {
  phases: Recorder[];
  /** Units put on sale over the run: stock plus the restocks that answered 200. */
  totalPutOnSale: number;
  soldOut?: boolean;
  checks: Check[];
  /** Latency and pacing bounds of the k6 thresholds: enforced with --thresholds, else reported. */
  thresholds: Check[];
  lines: string[];
}

export interface Scenario {
  /** Product id prefix of the k6 script (lt-<prefix>-...). */
  prefix: string;
  sizing(vars: Vars): Sizing;
  /** Seconds of load the run plans (for the overall time bound). */
  plannedSec(vars: Vars): number;
  run(ctx: RunContext): Promise<ScenarioResult>;
}

export const fmt = (ms: number | undefined) => (ms === undefined ? '-' : `${ms.toFixed(1)}ms`);

export function buyerOptions(ctx: RunContext, phase: string) {
  return {
    baseUrl: ctx.target.baseUrl,
    productId: ctx.productId,
    userPrefix: `${ctx.runId}-${phase}`,
    idempotency: ctx.idempotency,
    connections: ctx.connections,
    signal: ctx.signal,
  };
}

export function herdOf(vars: Vars, rateDefault: number, durationDefault: string): Segment[] {
  return herd(
    vars.int('RATE', rateDefault),
    vars.duration('RAMP', '5s'),
    vars.duration('DURATION', durationDefault),
  );
}
export const seconds = (segments: Segment[]) => segments.reduce((sum, s) => sum + s.seconds, 0);

/**
 * Calls `fn` at start + k x everySec for k from `first` while k x everySec < untilSec (an admin
 * loop beside the buyers). With `skipLate`, a tick already past when the one before ends is skipped
 * (a call slower than the interval costs the ticks it overlaps); returns how many were.
 */
export async function onSchedule(
  o: { first: number; everySec: number; untilSec: number; skipLate: boolean; signal: AbortSignal },
  fn: () => Promise<void>,
): Promise<number> {
  const start = performance.now();
  let skipped = 0;
  for (let k = o.first; k * o.everySec < o.untilSec; k++) {
    const wait = start + k * o.everySec * 1000 - performance.now();
    if (o.skipLate && wait < 0 && k > o.first) {
      skipped++;
      continue;
    }
    if (wait > 0) await sleep(wait, undefined, { signal: o.signal }).catch(() => {});
    if (o.signal.aborted) break;
    await fn();
  }
  return skipped;
}
