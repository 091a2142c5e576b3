// How fast this API process completes orders, as the waiting room's ETAs use it: a smoothed rate and
// the best of it lately, measured from the orders completed between two reports.

/** The pace this process has shown is forgotten over about this long (ms): see Pace.best. */
const PACE_MEMORY_MS = 10_000;

/**
 * @example
 * const pace = new Pace(clock.now());
 * pace.measure(completedSinceLastReport, clock.now());
 * line.standing(buyer, pace.best);
 */
export class Pace {
  /** Orders completed since lastAt, not yet in `completing`. */
  private unmeasured = 0;
  /** Orders per second completed here, smoothed over about a second. */
  private completing = 0;
  /**
   * The best of `completing` lately, fading over PACE_MEMORY_MS: what this process has shown it can
   * take. ETAs use it when the line's own pace is slower (WaitingLine.standing).
   */
  best = 0;

  /** `lastAt`: when (the room's clock) measuring starts. */
  constructor(private lastAt: number) {}

  /**
   * Folds the orders completed since the last call into the pace; those of a call made at the same
   * instant as the one before wait for the next.
   */
  measure(completed: number, now: number): void {
    this.unmeasured += completed;
    const elapsed = now - this.lastAt;
    if (elapsed <= 0) return;
    this.lastAt = now;
    const rate = (this.unmeasured * 1000) / elapsed;
    this.unmeasured = 0;
    this.completing += (rate - this.completing) * Math.min(1, elapsed / 1000);
    this.best = Math.max(this.completing, this.best * Math.exp(-elapsed / PACE_MEMORY_MS));
  }
}
