// Micro-batching: callers hand in items one at a time and each gets a promise that settles when
// the batch holding its item has been flushed, so N concurrent jobs cost one round trip.

/** Per-item outcome of a flush: undefined = success. Returning nothing means every item succeeded. */
export type FlushOutcome = ReadonlyArray<Error | undefined> | undefined;

export interface BatcherOptions<T> {
  /** Flush as soon as this many items are waiting. */
  maxSize: number;
  /** Flush at the latest this long after the first item of a batch arrived. */
  maxWaitMs: number;
  /** Persists a batch; throwing fails every item of it. */
  flush: (items: T[]) => Promise<FlushOutcome>;
}

interface Entry<T> {
  item: T;
  resolve: () => void;
  reject: (err: Error) => void;
}

export class Batcher<T> {
  private pending: Entry<T>[] = [];
  private timer: NodeJS.Timeout | undefined;
  private readonly inFlight = new Set<Promise<void>>();

  constructor(private readonly opts: BatcherOptions<T>) {}

  add(item: T): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      this.pending.push({ item, resolve, reject });
      if (this.pending.length >= this.opts.maxSize) this.flushNow();
      else this.timer ??= setTimeout(() => this.flushNow(), this.opts.maxWaitMs);
    });
  }

  /** Starts flushing whatever is waiting without waiting for the timer. */
  flushNow(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
    if (this.pending.length === 0) return;
    const entries = this.pending;
    this.pending = [];
    const run = this.run(entries);
    this.inFlight.add(run);
    void run.finally(() => this.inFlight.delete(run));
  }

  /** Flushes what is waiting and resolves once every started flush has settled. */
  async drain(): Promise<void> {
    this.flushNow();
    while (this.inFlight.size > 0) await Promise.allSettled([...this.inFlight]);
  }

  private async run(entries: Entry<T>[]): Promise<void> {
    let outcome: FlushOutcome;
    try {
      outcome = await this.opts.flush(entries.map((e) => e.item));
    } catch (err) {
      const error = err instanceof Error ? err : new Error(String(err));
      for (const e of entries) e.reject(error);
      return;
    }
    entries.forEach((e, i) => {
      const error = outcome?.[i];
      if (error) e.reject(error);
      else e.resolve();
    });
  }
}
