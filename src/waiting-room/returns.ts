// The buyers a line let in on this process's capacity and who have not come back yet: how many are
// still on their way, and what share of those let in lately came back at all (WaitingRoom.spare).

/** A let-in buyer is back within about this long (the room's retry spread, 250-750 ms, plus a report). */
export const RETURN_WINDOW_MS = 1000;
/**
 * A buyer told to come back is given up on this long after it was due: polling clients of a herd on
 * a busy machine were seen more than a second late.
 */
export const LATE_MS = 3000;
/** A waiting buyer is told to come back within this long at the latest (its Retry-After's ceiling). */
export const MAX_RETRY_MS = 15_000;
/**
 * Buyers settled (back or given up on) before the return ratio is trusted outright: a few late
 * buyers do not swing it, a wave that never returns does, within one report.
 */
const SAMPLE = 20;

/**
 * Let-in buyers on their way back, in batches by when they are given up on. Buyers who come back
 * keep capacity waiting for them; those who do not are forgotten after RETURN_WINDOW_MS, and the
 * ratio of the two says how many of the next ones to wait for. Only buyers let in on capacity that
 * orders used teach the ratio: those offered idle slots (a probe of the line) are waited for while
 * on their way, but one that finds nobody has cost nothing and says little of the next buyers.
 *
 * @example
 * const returns = new Returns();
 * returns.letIn(10, now);
 * returns.cameBack(now + 300);
 * returns.settle(now + 1500); // 9 given up on: the ratio falls towards 0.1
 * returns.expected(now + 1500); // 0: nobody on the way
 */
export class Returns {
  /** Batches of let-in buyers not back yet, oldest first: given up on at `until` (Redis' clock). */
  private batches: { until: number; count: number; teaching: number }[] = [];
  private back = 0;
  private gone = 0;
  /** Share of let-in buyers who came back lately: see settle(). */
  private ratio = 1;
  /** False until a let-in buyer came back or was given up on: until then all are expected. */
  private known = false;
  /** When (Redis' clock) a buyer holding a ticket last asked to be let in (a poll, a held stream). */
  private ticketSeenAt = Number.NEGATIVE_INFINITY;
  /** When the first buyer told to come back since then is due (Redis' clock); undefined: none. */
  private firstDueAt: number | undefined;

  /** `count` buyers let in at `now`, on their way back; `teaching` of them teach the ratio. */
  letIn(count: number, now: number, teaching = count): void {
    if (count > 0) this.batches.push({ until: now + RETURN_WINDOW_MS, count, teaching });
  }

  /** A let-in buyer came back (the oldest batch still waited for counts it). */
  cameBack(now: number): void {
    this.drop(now);
    const first = this.batches[0];
    if (!first) return;
    this.back += 1;
    first.count -= 1;
    if (first.count === 0) this.batches.shift();
  }

  /** A buyer holding a ticket asked to be let in: the line's buyers are still coming back. */
  ticketSeen(now: number): void {
    this.ticketSeenAt = now;
    this.firstDueAt = undefined;
  }

  /** A waiting buyer was told to come back at `dueAt`. */
  promised(dueAt: number): void {
    this.firstDueAt = Math.min(this.firstDueAt ?? dueAt, dueAt);
  }

  /**
   * Buyers still expected back at `now`: those on their way, as many as the ratio says come back.
   * Infinite until the line has seen whether its let-in buyers come back, while buyers holding
   * tickets still ask (one did within MAX_RETRY_MS, the longest a waiting buyer is sent away), and
   * until the first buyer told to come back since is LATE_MS late: the line is then
   * strictly first come, first served, every free slot held for it, as a herd's fairness needs. (A
   * herd's buyers are sent away for longer than a let-in buyer takes to come back: judged by let-in
   * buyers alone, the door let newcomers in before the first ticket came back, and 0.39-0.71 of the
   * units went to the first buyers against 0.96-0.99 without the door's spare slots.)
   */
  expected(now: number): number {
    this.drop(now);
    const due = (this.firstDueAt ?? Number.NEGATIVE_INFINITY) + LATE_MS;
    const live = Math.max(this.ticketSeenAt + MAX_RETRY_MS, due);
    if (!this.known || now < live) return Number.POSITIVE_INFINITY;
    let owed = 0;
    for (const b of this.batches) owed += b.count;
    return owed * this.ratio;
  }

  /** Folds those back and those given up on since the last call into the ratio (once a report). */
  settle(now: number): void {
    this.drop(now);
    const settled = this.back + this.gone;
    if (settled === 0) return;
    this.known = true;
    this.ratio += (this.back / settled - this.ratio) * Math.min(1, settled / SAMPLE);
    this.back = 0;
    this.gone = 0;
  }

  private drop(now: number): void {
    while (this.batches.length > 0 && (this.batches[0]?.until ?? 0) <= now) {
      const { count = 0, teaching = 0 } = this.batches.shift() ?? {};
      this.gone += Math.min(count, teaching);
    }
  }
}
