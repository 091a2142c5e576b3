// The herd phase's report: its runs side by side, the API CPU of each kind of answer, the timelines,
// and the targets of issue 24 judged on the runs with the waiting room on; .bench/orders-herd.json.
import { environment, writeJson } from '../lib/output.ts';
import { percentile, type Summary } from '../lib/stats.ts';
import { type Check, ms, num, printChecks, printTable, times } from '../lib/table.ts';
import type { AnswerCost } from './answer-cost.ts';
import type { HerdLoadResult } from './herd-load.ts';
import { printTimelines } from './herd-timeline.ts';

/** The buyers' kinds: streaming and polling against the room, and the room off. */
export const MODES = ['stream', 'poll', 'off'] as const;
export type HerdMode = (typeof MODES)[number];

/** Issue 40's targets, judged on the streaming runs. */
export const HERD_TARGETS = {
  sellOut: 1.3,
  /** Sell-out no worse than this times the WAITING_ROOM=off run's. */
  sellOutVsOff: 1.1,
  fairness: 0.95,
  p50Requests: 1,
  p99Requests: 2,
  p99Ms: 300,
  toldMs: 500,
  listenOverflows: 0,
};

export interface HerdResult {
  runs: HerdRun[];
  cost: AnswerCost;
}

export interface HerdRun {
  variant: string;
  mode: HerdMode;
  capacity: number;
  stock: number;
  buyers: number;
  spreadMs: number;
  load: HerdLoadResult;
  /** First request to the last 202, ms. */
  sellOutMs: number;
  fairness: number;
  requests: Summary;
  latency: Summary;
  /** After the last unit sold: until every waiting buyer had its 409, and the worst from its poll being due. */
  allToldMs: number;
  toldAfterDueMs: number;
  fates: Record<string, number>;
  /** API CPU ms per buyer during the run. */
  cpuMsPerBuyer: number;
  /** Connections the kernel dropped for a full listen queue during the run (all of this host's). */
  listenOverflows: number;
  /** The API's admission limit, sampled twice a second during the run: the waiting room's pace. */
  admissionLimit: Summary;
  unsold: number;
  violations: number;
}

/** A run's progress line. */
export function line(r: HerdRun): string {
  return `S ${r.stock} B ${r.buyers}  sell-out ${times(r.sellOutMs / ((r.stock / r.capacity) * 1000))}  fairness ${r.fairness.toFixed(3)}  requests/buyer p50 ${r.requests.p50} p99 ${r.requests.p99}  p99 ${ms(r.latency.p99)} ms  ${answersText(r)}`;
}

const answersText = (r: HerdRun) =>
  [...Object.entries(r.load.answers), ...Object.entries(r.load.errors)]
    .map(([k, n]) => `${k}:${n}`)
    .join(' ');

function printRuns(runs: HerdRun[], cost: AnswerCost): void {
  printTable(
    'Herd (first requests spread over the window; latency from each request\'s send; "told" = a waiting buyer\'s 409 after the last unit sold)',
    [
      { header: 'variant', value: (r: HerdRun) => `${r.variant} ${r.mode}`, align: 'left' },
      { header: 'capacity/s', value: (r: HerdRun) => num(r.capacity) },
      { header: 'S', value: (r: HerdRun) => num(r.stock) },
      { header: 'B', value: (r: HerdRun) => num(r.buyers) },
      { header: 'sell-out s', value: (r: HerdRun) => num(r.sellOutMs / 1000, 2) },
      {
        header: 'sell-out/(S/cap)',
        value: (r: HerdRun) => times(r.sellOutMs / ((r.stock / r.capacity) * 1000)),
      },
      { header: 'fairness', value: (r: HerdRun) => r.fairness.toFixed(3) },
      { header: 'req/buyer p50', value: (r: HerdRun) => num(r.requests.p50) },
      { header: 'p99', value: (r: HerdRun) => num(r.requests.p99) },
      { header: 'p99 ms', value: (r: HerdRun) => ms(r.latency.p99) },
      { header: 'max ms', value: (r: HerdRun) => ms(r.latency.max) },
      { header: 'all told ms', value: (r: HerdRun) => ms(r.allToldMs) },
      { header: 'told after due ms', value: (r: HerdRun) => ms(r.toldAfterDueMs) },
      { header: 'API CPU ms/buyer', value: (r: HerdRun) => r.cpuMsPerBuyer.toFixed(3) },
      { header: 'listen overflows', value: (r: HerdRun) => num(r.listenOverflows) },
      {
        header: 'queued CPU s (of sell-out)',
        value: (r: HerdRun) => {
          const s = ((r.load.answers['429 queued'] ?? 0) * cost.queued) / 1e6;
          return `${s.toFixed(2)} (${num((100 * s * 1000) / r.sellOutMs)} %)`;
        },
      },
      {
        header: 'admission limit min/p50',
        value: (r: HerdRun) => `${num(r.admissionLimit.min)}/${num(r.admissionLimit.p50)}`,
      },
      { header: 'answers', value: answersText, align: 'left' },
      {
        header: 'fates',
        value: (r: HerdRun) =>
          Object.entries(r.fates)
            .map(([k, n]) => `${k}:${n}`)
            .join(' '),
        align: 'left',
      },
      { header: 'unsold', value: (r: HerdRun) => num(r.unsold) },
      { header: 'invariants', value: (r: HerdRun) => (r.violations ? `${r.violations} BROKEN` : 'ok') },
    ],
    runs,
  );
}

function printCost(cost: AnswerCost): void {
  printTable(
    `API CPU per answer (closed model on the WAITING_ROOM=on process, median of ${cost.rounds} interleaved rounds)`,
    [
      { header: 'answer', value: (row: [string, number]) => row[0], align: 'left' },
      { header: 'µs', value: (row: [string, number]) => num(row[1]) },
      { header: '÷ bare 202', value: (row: [string, number]) => times(row[1] / cost.bare) },
    ],
    [
      ['POST /bench/bare 202 (validation, no Redis)', cost.bare],
      ['429 queued', cost.queued],
      ['409 sold_out', cost.soldOut],
    ] as [string, number][],
  );
}

/** Prints the herd table and the targets (waiting room on); writes .bench/orders-herd.json. */
export function reportHerd({ runs, cost }: HerdResult): Check[] {
  printRuns(runs, cost);
  printCost(cost);
  printTimelines(runs);
  const checks = runs
    .filter((r) => r.mode === 'stream')
    .flatMap((r) =>
      targetChecks(
        r,
        runs.find((o) => o.mode === 'off' && o.variant === r.variant),
      ),
    );
  printChecks('Herd targets of streaming admission (issue 40)', checks);
  writeJson('orders-herd', {
    environment: environment(),
    targets: HERD_TARGETS,
    answerCostMicros: cost,
    runs: runs.map(({ load, ...r }) => ({
      ...r,
      answers: load.answers,
      timeline: load.timeline,
      errors: load.errors,
      maxSendLagMs: load.maxSendLagMs,
      latencyP999Ms: percentile(Float64Array.from(load.latencies).sort(), 99.9),
    })),
    checks,
  });
  return checks;
}

const sellOutRatio = (r: HerdRun) => r.sellOutMs / ((r.stock / r.capacity) * 1000);

function targetChecks(r: HerdRun, off: HerdRun | undefined): Check[] {
  const at = `${r.variant} ${r.mode}`;
  const t = HERD_TARGETS;
  const sellOut = sellOutRatio(r);
  const vsOff = off ? sellOut / sellOutRatio(off) : Number.NaN;
  return [
    {
      name: `${at}: sell-out <= ${t.sellOut} x S/capacity, and <= ${t.sellOutVsOff} x the off run's`,
      pass: sellOut <= t.sellOut && vsOff <= t.sellOutVsOff,
      detail: `${times(sellOut)}, ${times(vsOff)} the off run's`,
    },
    {
      name: `${at}: listen-queue overflows ${t.listenOverflows}`,
      pass: r.listenOverflows <= t.listenOverflows,
      detail: num(r.listenOverflows),
    },
    {
      name: `${at}: fairness >= ${t.fairness}`,
      pass: r.fairness >= t.fairness,
      detail: r.fairness.toFixed(3),
    },
    {
      name: `${at}: requests per buyer p50 <= ${t.p50Requests}, p99 <= ${t.p99Requests}`,
      pass: r.requests.p50 <= t.p50Requests && r.requests.p99 <= t.p99Requests,
      detail: `${r.requests.p50} / ${r.requests.p99}`,
    },
    {
      name: `${at}: p99 of every answer's first byte <= ${t.p99Ms} ms`,
      pass: r.latency.p99 <= t.p99Ms,
      detail: `${ms(r.latency.p99)} ms`,
    },
    {
      name: `${at}: every waiting buyer told sold out <= ${t.toldMs} ms after the last unit sold`,
      pass: r.allToldMs <= t.toldMs,
      detail: `${ms(r.allToldMs)} ms`,
    },
    {
      name: `${at}: invariants (0 oversold, every 202 one row, no refusal a row)`,
      pass: r.violations === 0,
      detail: String(r.violations),
    },
    { name: `${at}: every unit sold`, pass: r.unsold === 0, detail: `${num(r.unsold)} unsold` },
  ];
}
