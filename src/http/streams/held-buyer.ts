// One waiting buyer's event stream (DESIGN.md §4, streaming admission): `queued` events while it waits,
// written only when its standing changed enough to matter, keep-alive comments, then one `result`.
import type { ServerResponse } from 'node:http';
import type { Arrival, Place } from '../../waiting-room/index.ts';
import type { Answer } from '../errors.ts';
import type { OrderCall } from '../order-intake.ts';

/** What a `queued` event tells: a 429 queued answer's fields, less retryAfterMs. */
export type Standing = Omit<Place, 'retryAfterMs'>;

/** What a held buyer's stream writes, for the metrics. */
export type StreamEvent = 'queued' | 'result' | 'keep-alive';

/** A queued event at most this often per stream (ms): about once a second, as the contract says. */
const PROGRESS_EVERY_MS = 1000;
/** A comment at least this often while nothing else is sent (ms): proxies keep the stream open. */
export const KEEP_ALIVE_MS = 15_000;

/**
 * A buyer held on its stream until its turn. Written by the StreamHolder's passes only: it has no
 * timer of its own. `call` is the order as read, to be placed when the line reaches `arrival`.
 *
 * @example
 * const buyer = new HeldBuyer(res, call, arrival, now);
 * buyer.open(requestId, standing, now);
 * buyer.finish({ status: 202, body: order });
 */
export class HeldBuyer {
  /** True while its order is being placed (the holder does not start a second attempt). */
  placing = false;
  /** True once the stream has ended, by a result or by the client. */
  done = false;
  /** performance.now() when it was held. */
  readonly heldSince: number;
  private lastWriteAt: number;
  private lastQueuedAt = Number.NEGATIVE_INFINITY;
  private last: Standing | undefined;

  constructor(
    private readonly res: ServerResponse,
    readonly call: OrderCall,
    readonly arrival: Arrival,
    now: number,
  ) {
    this.heldSince = now;
    this.lastWriteAt = now;
  }

  get productId(): string {
    return this.arrival.productId;
  }

  /** Units ordered (validated before it was held). */
  get quantity(): number {
    return (this.call.body as { quantity?: number }).quantity ?? 1;
  }

  /** The stream's head and its first `queued` event, at once. */
  open(requestId: string, standing: Standing, now: number): void {
    this.res.writeHead(200, [
      'Content-Type',
      'text/event-stream; charset=utf-8',
      'Cache-Control',
      'no-cache, no-transform',
      // nginx and its kin buffer answers unless told not to: a buffered event tells nobody anything.
      'X-Accel-Buffering',
      'no',
      'Queue-Ticket',
      standing.ticket,
      'X-Request-Id',
      requestId,
    ]);
    this.queued(standing, now);
  }

  /** A `queued` event when due (a second since the last) and the standing changed enough to matter. */
  progress(standing: Standing, now: number): StreamEvent | undefined {
    if (now - this.lastQueuedAt < PROGRESS_EVERY_MS || !this.changed(standing)) return undefined;
    this.queued(standing, now);
    return 'queued';
  }

  /** Due for a progress event (the holder computes the standing only then). */
  due(now: number): boolean {
    return now - this.lastQueuedAt >= PROGRESS_EVERY_MS;
  }

  /** A comment when nothing was written for KEEP_ALIVE_MS. */
  keepAlive(now: number): StreamEvent | undefined {
    if (now - this.lastWriteAt < KEEP_ALIVE_MS) return undefined;
    this.write(': keep-alive\n\n', now);
    return 'keep-alive';
  }

  /** The outcome as the JSON answer would have had it, then the end of the stream. */
  finish(answer: Answer): void {
    if (this.done) return;
    this.done = true;
    const data = JSON.stringify({ status: answer.status, body: answer.body });
    this.res.end(`event: result\ndata: ${data}\n\n`);
  }

  private queued(standing: Standing, now: number): void {
    this.last = standing;
    this.lastQueuedAt = now;
    this.write(`event: queued\ndata: ${JSON.stringify(standing)}\n\n`, now);
  }

  private write(chunk: string, now: number): void {
    this.lastWriteAt = now;
    this.res.write(chunk);
  }

  /** Worth telling a person: a different stock, a place 5 % (or 10 buyers) nearer, an ETA a second off. */
  private changed(s: Standing): boolean {
    const l = this.last;
    if (!l) return true;
    const moved = l.position - s.position;
    return (
      s.available !== l.available ||
      moved >= Math.max(1, Math.min(10, l.position * 0.05)) ||
      Math.abs(s.etaMs - l.etaMs) >= 1000
    );
  }
}
