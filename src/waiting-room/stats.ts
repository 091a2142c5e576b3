// What the dashboard, the metrics and a product's page show of waiting lines: one line's figures,
// and every line's summed or at its worst.
import type { WaitingLine } from './line.ts';
import type { DrawView } from './lottery.ts';

/** A line as the dashboard and the metrics show it. */
export interface LineStats {
  /** Buyers waiting (every process's). */
  waiting: number;
  /** How far behind now the serving point is, ms. */
  servingLagMs: number;
  /** Buyers let in per second (all processes together). */
  admittedPerSecond: number;
  /** ETA of the last buyer in line, ms (0: nobody waits). */
  etaMs: number;
}

/** What GET /api/products/:id shows of a product's queue. */
export interface QueueView {
  waiting: number;
  /** How far behind now the line serves, ms; null while nobody has been let in yet. */
  servingLagMs: number | null;
  lottery?: DrawView;
}

/** One line's figures at `now` (Redis' clock). */
export function lineStats(line: WaitingLine, now: number): LineStats {
  return {
    waiting: line.waiting,
    servingLagMs: Math.max(0, Math.round(now - line.servingPoint)),
    admittedPerSecond: line.rate,
    etaMs: line.rate > 0 ? Math.round((line.waiting * 1000) / line.rate) : 0,
  };
}

/** Lines summed (waiting, rate) or at their worst (lag, ETA), for the metrics. */
export function totalStats(lines: Iterable<LineStats>): LineStats {
  const total = { waiting: 0, servingLagMs: 0, admittedPerSecond: 0, etaMs: 0 };
  for (const s of lines) {
    total.waiting += s.waiting;
    total.admittedPerSecond += s.admittedPerSecond;
    total.servingLagMs = Math.max(total.servingLagMs, s.servingLagMs);
    total.etaMs = Math.max(total.etaMs, s.etaMs);
  }
  return total;
}
