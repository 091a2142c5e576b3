// The lowest round trip a remote service answered in lately: what the order path pays it on every
// order whatever this process's load (admission control's latency target sits on top of it).

/** How long one window of samples lasts; the floor is the lowest of the current and the last one. */
const WINDOW_MS = 5000;

/**
 * The fastest of the round trips noted in the last one to two windows, 0 before the first. A minimum
 * rather than a mean: a round trip slowed by this process's own load is not the service's latency.
 */
export class RoundTripFloor {
  private current = Number.POSITIVE_INFINITY;
  private previous = Number.POSITIVE_INFINITY;
  private windowStart = Number.NEGATIVE_INFINITY;

  /** Notes one round trip of `ms` at monotonic time `now`. */
  note(ms: number, now: number): void {
    this.roll(now);
    this.current = Math.min(this.current, ms);
  }

  /** The floor at monotonic time `now` (ms); 0 when nothing was noted in the last two windows. */
  value(now: number): number {
    this.roll(now);
    const floor = Math.min(this.current, this.previous);
    return Number.isFinite(floor) ? floor : 0;
  }

  private roll(now: number): void {
    if (now - this.windowStart < WINDOW_MS) return;
    // A window or more without a sample: the last one is as old as nothing.
    this.previous = now - this.windowStart < 2 * WINDOW_MS ? this.current : Number.POSITIVE_INFINITY;
    this.current = Number.POSITIVE_INFINITY;
    this.windowStart = now;
  }
}
