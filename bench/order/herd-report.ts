// The herd phase's report: its runs side by side, the API CPU of each kind of answer, the timelines,
// and the targets of issue 24 judged on the runs with the waiting room on; .bench/orders-herd.json.
import { environment, writeJson } from '../lib/output.ts';
import { percentile, type Summary } from '../lib/stats.ts';
import { type Check, ms, num, printChecks, printTable, times } from '../lib/table.ts';
import type { AnswerCost } from './answer-cost.ts';
import type { HerdLoadResult } from './herd-load.ts';
import { printTimelines } from './herd-timeline.ts';

export const HERD_TARGETS = {
  sellOut: 1.5,
  fairness: 0.95,
  p50Requests: 3,
  p99Requests: 10,
  p99Ms: 500,
  toldMs: 1000,
};

export interface HerdResult {
  runs: HerdRun[];
  cost: AnswerCost;
}

export interface HerdRun {
  variant: string;
  room: 'on' | 'off';
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
  /** API CPU ms per answer during the run. */
  cpuMsPerAnswer: number;
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
      { header: 'variant', value: (r: HerdRun) => `${r.variant} room=${r.room}`, align: 'left' },
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
      { header: 'API CPU ms/answer', value: (r: HerdRun) => r.cpuMsPerAnswer.toFixed(3) },
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
  const checks = runs.filter((r) => r.room === 'on').flatMap(targetChecks);
  printChecks('Herd targets with the waiting room (issue 24)', checks);
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

function targetChecks(r: HerdRun): Check[] {
  const at = `${r.variant}`;
  const t = HERD_TARGETS;
  const sellOut = r.sellOutMs / ((r.stock / r.capacity) * 1000);
  return [
    {
      name: `${at}: sell-out <= ${t.sellOut} x S/capacity`,
      pass: sellOut <= t.sellOut,
      detail: times(sellOut),
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
      name: `${at}: p99 of every answer <= ${t.p99Ms} ms`,
      pass: r.latency.p99 <= t.p99Ms,
      detail: `${ms(r.latency.p99)} ms`,
    },
    {
      name: `${at}: every waiting buyer told sold out <= ${t.toldMs} ms after its poll was due`,
      pass: r.toldAfterDueMs <= t.toldMs,
      detail: `${ms(r.toldAfterDueMs)} ms`,
    },
    {
      name: `${at}: invariants (0 oversold, every 202 one row, no refusal a row)`,
      pass: r.violations === 0,
      detail: String(r.violations),
    },
    { name: `${at}: every unit sold`, pass: r.unsold === 0, detail: `${num(r.unsold)} unsold` },
  ];
}
