// Event-loop delay and utilization of this process over the last window (perf_hooks): admission
// control's "is this process already behind?" and "is it saturated?" signals.
import { type EventLoopUtilization, monitorEventLoopDelay, performance } from 'node:perf_hooks';
import type { LoopSignals } from './admission.ts';

/**
 * The mean event-loop delay (ms) and the event-loop utilization (the share of wall time the loop
 * spent running code rather than waiting for I/O, 0..1) over the last `windowMs`, refreshed every
 * window. The mean delay, not the maximum: a single GC pause is not overload, a loop that is late
 * on every turn is.
 */
export class EventLoopLag implements LoopSignals {
  private readonly histogram = monitorEventLoopDelay({ resolution: 10 });
  private readonly timer: NodeJS.Timeout;
  private lastMs = 0;
  private elu: EventLoopUtilization = performance.eventLoopUtilization();
  private lastUtilization = 0;

  constructor(windowMs = 200) {
    this.histogram.enable();
    this.timer = setInterval(() => {
      // mean is in ns; NaN when no sample was taken in the window.
      const mean = this.histogram.mean / 1e6;
      this.lastMs = Number.isFinite(mean) ? mean : 0;
      this.histogram.reset();
      const now = performance.eventLoopUtilization();
      this.lastUtilization = performance.eventLoopUtilization(now, this.elu).utilization;
      this.elu = now;
    }, windowMs);
    this.timer.unref();
  }

  lagMs(): number {
    return this.lastMs;
  }

  utilization(): number {
    return this.lastUtilization;
  }

  close(): void {
    clearInterval(this.timer);
    this.histogram.disable();
  }
}
