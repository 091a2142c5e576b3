// The herd phase's timelines: for each run with the waiting room on, its answers by the second they
// came, so that a run shows how long its first requests took to answer and when the orders got through.
import { num, printTable } from '../lib/table.ts';
import type { HerdLoadResult } from './herd-load.ts';

/** What a timeline is printed from (a HerdRun). */
export interface TimelineRun {
  variant: string;
  mode: 'stream' | 'poll' | 'off';
  load: Pick<HerdLoadResult, 'timeline'>;
}

const SHOWN = ['202', '429 queued', '409 sold_out'];

interface Second {
  /** The second, or `later` for everything after the sell-out's next second summed. */
  at: string;
  counts: Record<string, number>;
}

/** Seconds up to the one after the last 202 or queued answer; what follows (the 409s) in one row. */
function untilSoldOut(timeline: Array<Record<string, number>>): Second[] {
  let last = 0;
  timeline.forEach((counts, at) => {
    if (counts['202'] || counts['429 queued']) last = at;
  });
  const rows = timeline.slice(0, last + 2).map((counts, at) => ({ at: String(at), counts }));
  const later: Record<string, number> = {};
  for (const counts of timeline.slice(last + 2))
    for (const [key, n] of Object.entries(counts)) later[key] = (later[key] ?? 0) + n;
  return Object.keys(later).length ? [...rows, { at: 'later', counts: later }] : rows;
}

/** One table per run with the room on: answers per second, the buyers' first requests among them. */
export function printTimelines(runs: TimelineRun[]): void {
  for (const r of runs.filter((run) => run.mode !== 'off')) {
    const rows = untilSoldOut(r.load.timeline);
    printTable(
      `Herd timeline, ${r.variant} ${r.mode}: answers by the second they came (from the first send)`,
      [
        { header: 's', value: (row: Second) => row.at },
        { header: 'first requests', value: (row: Second) => num(row.counts.first ?? 0) },
        ...SHOWN.map((key) => ({ header: key, value: (row: Second) => num(row.counts[key] ?? 0) })),
        { header: 'other', value: (row: Second) => num(other(row.counts)) },
      ],
      rows,
    );
  }
}

function other(counts: Record<string, number>): number {
  let n = 0;
  for (const [key, c] of Object.entries(counts)) if (key !== 'first' && !SHOWN.includes(key)) n += c;
  return n;
}
