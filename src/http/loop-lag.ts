// Event-loop delay of this process, sampled with perf_hooks.monitorEventLoopDelay and read as the
// mean delay of the last window: admission control's "is this process already behind?" signal.
import { monitorEventLoopDelay } from 'node:perf_hooks';

/**
 * The mean event-loop delay (ms) over the last `windowMs`, refreshed every window. The mean, not
 * the maximum: a single GC pause is not overload, a loop that is late on every turn is.
 */
export class EventLoopLag {
  private readonly histogram = monitorEventLoopDelay({ resolution: 10 });
  private readonly timer: NodeJS.Timeout;
  private lastMs = 0;

  constructor(windowMs = 200) {
    this.histogram.enable();
    this.timer = setInterval(() => {
      // mean is in ns; NaN when no sample was taken in the window.
      const mean = this.histogram.mean / 1e6;
      this.lastMs = Number.isFinite(mean) ? mean : 0;
      this.histogram.reset();
    }, windowMs);
    this.timer.unref();
  }

  /** Mean delay (ms) of the last window. */
  get current(): number {
    return this.lastMs;
  }

  close(): void {
    clearInterval(this.timer);
    this.histogram.disable();
  }
}
