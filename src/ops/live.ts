// The live view of one product behind the dashboard (GET /admin/products/:id/live): GET
// /admin/products/:id's answer (sale-view.ts) and its history, the waiting room's line as the product
// page shows it, the order queue, and this process's rates (sampler.ts). Kept
// cheap for any number of viewers: each product's status is read from Redis/Postgres at most once
// per second and concurrent polls share that read; the queue likewise, for all products at once.
import os from 'node:os';
import type { SaleStatus } from '../inventory/status.ts';
import type { Metrics, QUEUE_STATES } from '../metrics.ts';
import type { LineStats, QueueView as LineView } from '../waiting-room/room.ts';
import { type SaleView, type SaleViewDeps, saleView } from './sale-view.ts';
import { HISTORY_POINTS, IDLE_STOP_MS, type RatePoint, RateSampler } from './sampler.ts';

/** A read is reused this long; polls meanwhile get it (or wait for the one in flight). */
export const READ_TTL_MS = 1000;
/** Products watched at once at most; the one polled longest ago is forgotten first. */
export const MAX_WATCHED = 64;

export interface SalePoint {
  t: number;
  available: number;
  sold: number;
  reserved: number;
  confirmed: number;
  paid: number;
  /** Units of expired or cancelled orders given back so far: sold + returned is every unit ever sold. */
  returned: number;
  /** Orders waiting to be paid, and orders expired and cancelled so far (the product's, every process's). */
  awaitingPayment: number;
  expired: number;
  cancelled: number;
  /** Units that reached Postgres per second since the previous read (any writer process). */
  persistedPerSecond: number | null;
}

export interface QueueView {
  waiting: number;
  active: number;
  delayed: number;
  failed: number;
  /** Writer lag: age of the oldest job not yet written (flashsale_order_queue_lag_seconds). */
  lagSeconds: number;
}

export interface LiveProduct {
  productId: string;
  at: number;
  /** Rates and latencies are this process's: behind a load balancer, one replica's share. */
  replica: { hostname: string; pid: number };
  /** GET /admin/products/:id's answer, and whether the sale is sold out. */
  sale: SaleView & { soldOut: boolean };
  queue: QueueView;
  /** The waiting room's line of the product as its public view shows it, with pace and ETA; null when the room is off or nobody waits. */
  waitingRoom: (LineView & Omit<LineStats, 'servingLagMs'>) | null;
  /** Waiting buyers held on event streams by this process, and its bound; null without streams. */
  streams: { held: number; max: number } | null;
  /**
   * REDIS_WAIT_REPLICAS: Redis masters short of replicas (their shards are skipped) and the units
   * orders last found stranded on them, as this process sees them.
   */
  replicas: { mastersShort: number; unitsStranded: number };
  /** Over the last few seconds; null until the sampler has two snapshots. */
  now: (RatePoint & { persistedPerSecond: number | null }) | null;
  rates: RatePoint[];
  saleHistory: SalePoint[];
}

/** One value read at most every `ttlMs`; callers meanwhile share it or the read in flight. */
class Cached<T> {
  private at = 0;
  private value: T | undefined;
  private inFlight: Promise<T> | undefined;
  lastUse = Date.now();

  constructor(
    private readonly ttlMs: number,
    private readonly read: () => Promise<T>,
  ) {}

  get(): Promise<T> {
    this.lastUse = Date.now();
    if (this.value !== undefined && Date.now() - this.at < this.ttlMs) return Promise.resolve(this.value);
    this.inFlight ??= this.read()
      .then((v) => {
        this.value = v;
        this.at = Date.now();
        return v;
      })
      .finally(() => {
        this.inFlight = undefined;
      });
    return this.inFlight;
  }
}

interface Watched {
  status: Cached<SaleView>;
  history: SalePoint[];
}

export interface LiveDeps {
  /** What GET /admin/products/:id reads (sale-view.ts). */
  views: SaleViewDeps;
  metrics: Metrics;
  /** The waiting room's line of a product (WAITING_ROOM=on): WaitingRoom.stats. */
  waitingLine?: (productId: string) => Promise<(LineView & Omit<LineStats, 'servingLagMs'>) | undefined>;
  /** This process's held streams (StreamHolder), when streaming admission is on. */
  streams?: { readonly size: number; readonly max: number } | undefined;
}

export class LiveView {
  private readonly sampler: RateSampler;
  private readonly watched = new Map<string, Watched>();
  private readonly queue: Cached<QueueView>;

  constructor(private readonly deps: LiveDeps) {
    this.sampler = new RateSampler(deps.metrics);
    this.queue = new Cached(READ_TTL_MS, () => this.readQueue());
  }

  /** The live view; `since` (epoch ms) leaves out history the caller already has. */
  async product(productId: string, since = 0): Promise<LiveProduct> {
    await this.sampler.watch();
    const w = this.watch(productId);
    const [sale, queue, line, replicas] = await Promise.all([
      w.status.get(),
      this.queue.get(),
      this.deps.waitingLine?.(productId),
      this.replicas(),
    ]);
    const now = this.sampler.now();
    const latest = w.history.at(-1);
    return {
      productId,
      at: Date.now(),
      replica: { hostname: os.hostname(), pid: process.pid },
      sale: { ...sale, soldOut: sale.available === 0 && sale.pending === null },
      queue,
      waitingRoom: line ?? null,
      streams: this.deps.streams ? { held: this.deps.streams.size, max: this.deps.streams.max } : null,
      replicas,
      now: now && { ...now, persistedPerSecond: latest?.persistedPerSecond ?? null },
      rates: this.sampler.history(since),
      saleHistory: w.history.filter((p) => p.t > since),
    };
  }

  /** From the replica gauges (flashsale_redis_masters_short_of_replicas, flashsale_units_stranded). */
  private async replicas(): Promise<LiveProduct['replicas']> {
    const { shortMasters, unitsStranded } = this.deps.metrics;
    const [short, stranded] = await Promise.all([shortMasters.get(), unitsStranded.get()]);
    return { mastersShort: short.values[0]?.value ?? 0, unitsStranded: stranded.values[0]?.value ?? 0 };
  }

  stop(): void {
    this.sampler.stop();
    this.watched.clear();
  }

  private watch(productId: string): Watched {
    const found = this.watched.get(productId);
    if (found) return found;
    this.forgetIdle();
    const w: Watched = {
      history: [],
      status: new Cached(READ_TTL_MS, async () => {
        const view = await saleView(this.deps.views, productId);
        record(w.history, view);
        return view;
      }),
    };
    this.watched.set(productId, w);
    return w;
  }

  /** Drops products nobody polled for a while, and the least recent beyond MAX_WATCHED. */
  private forgetIdle(): void {
    const byUse = [...this.watched].sort(([, a], [, b]) => a.status.lastUse - b.status.lastUse);
    for (const [id, w] of byUse) {
      if (Date.now() - w.status.lastUse > IDLE_STOP_MS || this.watched.size >= MAX_WATCHED)
        this.watched.delete(id);
    }
  }

  private async readQueue(): Promise<QueueView> {
    const [jobs, lag] = await Promise.all([
      this.deps.metrics.queueJobs.get(),
      this.deps.metrics.queueLag.get(),
    ]);
    const count = (state: (typeof QUEUE_STATES)[number]) =>
      jobs.values.find((v) => v.labels.state === state)?.value ?? 0;
    return {
      waiting: count('waiting'),
      active: count('active'),
      delayed: count('delayed'),
      failed: count('failed'),
      lagSeconds: lag.values[0]?.value ?? 0,
    };
  }
}

function record(history: SalePoint[], s: SaleStatus): void {
  const t = Date.now();
  const previous = history.at(-1);
  history.push({
    t,
    available: s.available,
    sold: s.sold,
    reserved: s.reserved,
    confirmed: s.confirmed,
    paid: s.paid,
    returned: s.returned,
    awaitingPayment: s.awaitingPayment,
    expired: s.orders.expired,
    cancelled: s.orders.cancelled,
    persistedPerSecond: previous
      ? Math.max(0, s.confirmed - previous.confirmed) / Math.max(0.001, (t - previous.t) / 1000)
      : null,
  });
  if (history.length > HISTORY_POINTS) history.shift();
}
