// The counts of one fixed-time load (bench/order/load.ts) as autocannon reports its requests and
// answers: the window's latencies and rates, every real order's status, and the tail's answers.
import type autocannon from 'autocannon';

/** Every answered real order, in order of answer: performance.now() ms at send and answer. */
export interface Timeline {
  start: Float64Array;
  end: Float64Array;
  status: Uint16Array;
}

export interface LoadProgress {
  /** 2xx answers to real orders so far (live, for the writer sampler). */
  accepted: number;
}

export interface LoadResult {
  /** Length of the measured window, s. */
  seconds: number;
  /** Answers with the expected status inside the window. */
  ok: number;
  okPerSecond: number;
  /** Latencies (ms) of every answer inside the window, any status. */
  latencies: Float64Array;
  /** Statuses of all answers to real orders (window and tail). */
  statuses: Record<string, number>;
  /** 2xx answers to real orders (window and tail): what the client knows was accepted. */
  accepted: number;
  /** Answers inside the window with another status than expected. */
  unexpected: number;
  /** Connection errors and timeouts (autocannon). */
  errors: number;
  timeouts: number;
  /** Real orders sent / answered; unknown = sent - answered (outcome unknown to the client). */
  realSent: number;
  realAnswered: number;
  unknown: number;
  /** Answers to the tail (no route) requests. */
  tailAnswered: number;
  /** Only with LoadOptions.timeline. */
  timeline?: Timeline;
}

/** What the tally needs of the load's options. */
type Options = { seconds: number; expectStatus: number; timeline?: boolean };

export class LoadTally {
  readonly progress: LoadProgress = { accepted: 0 };
  /** After the window: requests go to the no-route path and their 404s are the tail's. */
  inTail = false;
  realSent = 0;
  realAnswered = 0;
  private readonly latencies: number[] = [];
  private readonly statuses: Record<string, number> = {};
  private ok = 0;
  private unexpected = 0;
  private tailAnswered = 0;
  private readonly timeline = { start: [] as number[], end: [] as number[], status: [] as number[] };

  constructor(
    private readonly o: Options,
    private readonly deadline: number,
  ) {}

  /** An answer, at `now` (performance.now()) with autocannon's response time in ms. */
  answer(statusCode: number, responseTime: number, now: number): void {
    // A real order never gets a 404 (its product exists): after the window, 404 is the tail's.
    if (statusCode === 404 && this.inTail) {
      this.tailAnswered += 1;
      return;
    }
    this.realAnswered += 1;
    this.statuses[statusCode] = (this.statuses[statusCode] ?? 0) + 1;
    if (this.o.timeline) {
      this.timeline.start.push(now - responseTime);
      this.timeline.end.push(now);
      this.timeline.status.push(statusCode);
    }
    if (statusCode >= 200 && statusCode < 300) this.progress.accepted += 1;
    if (now < this.deadline) {
      this.latencies.push(responseTime);
      if (statusCode === this.o.expectStatus) this.ok += 1;
      else this.unexpected += 1;
    }
  }

  result(results: autocannon.Result[]): LoadResult {
    const seconds = this.o.seconds;
    const t = this.timeline;
    return {
      seconds,
      ok: this.ok,
      okPerSecond: this.ok / seconds,
      latencies: Float64Array.from(this.latencies),
      statuses: this.statuses,
      accepted: this.progress.accepted,
      unexpected: this.unexpected,
      errors: results.reduce((a, r) => a + r.errors, 0),
      timeouts: results.reduce((a, r) => a + r.timeouts, 0),
      realSent: this.realSent,
      realAnswered: this.realAnswered,
      unknown: this.realSent - this.realAnswered,
      tailAnswered: this.tailAnswered,
      timeline: this.o.timeline
        ? {
            start: Float64Array.from(t.start),
            end: Float64Array.from(t.end),
            status: Uint16Array.from(t.status),
          }
        : undefined,
    };
  }
}
