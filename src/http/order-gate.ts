// The door of POST /api/orders, in process memory and before any Redis round trip: the sold-out fast
// path passes free, then the per-address and per-buyer rate limits, then admission control.
import { performance } from 'node:perf_hooks';
import { BusyError } from '../inventory/errors.ts';
import {
  AdmissionControl,
  type AdmissionOptions,
  type LoopSignals,
  type Release,
  type ShedReason,
} from './admission.ts';
import { RateLimitedError } from './errors.ts';
import { type RateLimit, TokenBuckets } from './token-buckets.ts';

export interface OrderGateOptions {
  admission: AdmissionOptions;
  /** Per buyer (userId); undefined: no limit. */
  perUser?: RateLimit;
  /** Per client address (req.ip, after `trust proxy`); undefined: no limit. */
  perAddress?: RateLimit;
  /** True when the product is known sold out in this process: such orders cost nothing, never gated. */
  isSoldOut: (productId: string) => boolean;
  /** The process's event-loop delay and utilization (an EventLoopLag). */
  loop?: LoopSignals;
  onShed?: (reason: ShedReason) => void;
  onRateLimited?: (by: 'user' | 'address') => void;
  /** [0, 1): spreads Retry-After so refused clients do not come back in one wave. */
  random?: () => number;
}

/** Refused orders come back after 1..(1 + RETRY_SPREAD_S) seconds, spread at random. */
const RETRY_SPREAD_S = 2;

/** A permit that frees nothing: the order was not counted (sold-out fast path). */
const NOTHING: Release = () => {};

/**
 * Decides, in microseconds, whether an order may go on to the order use case. `enter` answers a
 * Release (call it when the order is answered) or throws RateLimitedError (429 rate_limited) or
 * BusyError (429 busy), both with a jittered Retry-After. A refused order touched nothing, so its
 * retry with the same Idempotency-Key is a first attempt.
 */
export class OrderGate {
  readonly admission: AdmissionControl;
  private readonly users?: TokenBuckets;
  private readonly addresses?: TokenBuckets;
  private readonly random: () => number;

  constructor(private readonly o: OrderGateOptions) {
    this.admission = new AdmissionControl(o.admission, o.loop);
    if (o.perUser) this.users = new TokenBuckets(o.perUser);
    if (o.perAddress) this.addresses = new TokenBuckets(o.perAddress);
    this.random = o.random ?? Math.random;
  }

  async enter(order: { productId: string; userId: string }, address: string | undefined): Promise<Release> {
    if (this.o.isSoldOut(order.productId)) return NOTHING;
    const now = performance.now();
    if (this.addresses && address !== undefined) this.limit(this.addresses.take(address, now), 'address');
    if (this.users) this.limit(this.users.take(order.userId, now), 'user');
    const admitted = await this.admission.acquire();
    if (typeof admitted === 'function') return admitted;
    throw this.shed(admitted, order.productId);
  }

  /**
   * The Retry-After (seconds) of the 429 busy an order arriving now would get from admission control,
   * decided before its request is read: the shed lane answers it without parsing (see shed-lane.ts).
   * Undefined: let it in. No error is built: under a herd this runs thousands of times a second.
   */
  refuseOnArrival(): number | undefined {
    const reason = this.admission.refusalOnArrival();
    if (reason === undefined) return undefined;
    this.o.onShed?.(reason);
    return this.retryAfter();
  }

  private shed(reason: ShedReason, productId: string): BusyError {
    this.o.onShed?.(reason);
    return new BusyError(productId, this.retryAfter());
  }

  /** 1..(1 + RETRY_SPREAD_S) seconds at random. */
  private retryAfter(): number {
    return 1 + Math.floor(this.random() * (RETRY_SPREAD_S + 1));
  }

  private limit(waitSeconds: number, by: 'user' | 'address'): void {
    if (waitSeconds === 0) return;
    this.o.onRateLimited?.(by);
    throw new RateLimitedError(by, Math.ceil(waitSeconds + this.random()));
  }
}
