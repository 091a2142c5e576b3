// This process's view of the sales: cached sale + shard list per product, the round-robin shard
// counter, shards known empty, and the sold-out flag that lets a sold-out product be answered with
// no Redis round trip. Sale events on pub/sub invalidate a product; a lost subscription clears all.
import type { Redis } from 'ioredis';
import { parseSaleEvent } from './events.ts';
import { SALE_EVENTS_CHANNEL } from './keys.ts';
import { loadSale, type Sale } from './sale.ts';

interface Entry {
  sale: Sale | null;
  loadedAt: number;
  soldOut: boolean;
  /** Shard indexes of this generation seen at 0 stock; stock only rises again with a sale event. */
  empty: Set<number>;
  cursor: number;
}

/** An unknown product is re-checked after this long even without an event (creation races). */
const UNKNOWN_TTL_MS = 1000;

export class Catalog {
  private readonly entries = new Map<string, Entry>();
  private readonly loading = new Map<string, Promise<Entry>>();
  /** Bumped by each invalidation, so a load that raced an event does not cache what it read. */
  private readonly epochs = new Map<string, number>();
  private started: Promise<void> | undefined;

  constructor(
    private readonly redis: Redis,
    private readonly subscriber: Redis,
  ) {}

  start(): Promise<void> {
    this.started ??= (async () => {
      this.subscriber.on('message', (channel: string, message: string) => {
        if (channel !== SALE_EVENTS_CHANNEL) return;
        const event = parseSaleEvent(message);
        if (event) this.invalidate(event.productId);
      });
      let connectedOnce = false;
      this.subscriber.on('ready', () => {
        // Events sent while we were disconnected are lost; forget everything we cached.
        if (connectedOnce) this.entries.clear();
        connectedOnce = true;
      });
      await this.subscriber.subscribe(SALE_EVENTS_CHANNEL);
    })();
    return this.started;
  }

  invalidate(productId: string): void {
    this.entries.delete(productId);
    this.loading.delete(productId);
    this.epochs.set(productId, (this.epochs.get(productId) ?? 0) + 1);
  }

  async get(productId: string): Promise<Sale | null> {
    return (await this.entry(productId)).sale;
  }

  /** True when this process saw every shard empty and no sale event has arrived since. */
  isSoldOut(productId: string): boolean {
    return this.entries.get(productId)?.soldOut === true;
  }

  markSoldOut(sale: Sale): void {
    const e = this.entries.get(sale.productId);
    if (e?.sale?.generation === sale.generation) e.soldOut = true;
  }

  markEmpty(sale: Sale, index: number): void {
    const e = this.entries.get(sale.productId);
    if (e?.sale?.generation === sale.generation) e.empty.add(index);
  }

  /**
   * Shard indexes to try, in this process's round-robin order: the next shard first, then the rest;
   * shards seen empty are left to the end (they are re-checked before the product is called sold out).
   */
  shardOrder(sale: Sale): { first: number[]; empty: number[] } {
    const e = this.entries.get(sale.productId);
    const n = sale.shardKeys.length;
    const start = e ? e.cursor++ % n : Math.floor(Math.random() * n);
    const first: number[] = [];
    const empty: number[] = [];
    for (let k = 0; k < n; k++) {
      const i = (start + k) % n;
      if (e?.sale?.generation === sale.generation && e.empty.has(i)) empty.push(i);
      else first.push(i);
    }
    return { first, empty };
  }

  private async entry(productId: string): Promise<Entry> {
    const cached = this.entries.get(productId);
    if (cached && (cached.sale || Date.now() - cached.loadedAt < UNKNOWN_TTL_MS)) return cached;
    let pending = this.loading.get(productId);
    if (!pending) {
      const epoch = this.epochs.get(productId);
      pending = loadSale(this.redis, productId)
        .then((sale) => {
          const entry: Entry = {
            sale,
            loadedAt: Date.now(),
            soldOut: false,
            empty: new Set(),
            // A random start per process keeps processes from marching over the shards in step.
            cursor: Math.floor(Math.random() * 1_000_000),
          };
          if (this.epochs.get(productId) === epoch) this.entries.set(productId, entry);
          return entry;
        })
        .finally(() => {
          if (this.loading.get(productId) === pending) this.loading.delete(productId);
        });
      this.loading.set(productId, pending);
    }
    return pending;
  }
}
