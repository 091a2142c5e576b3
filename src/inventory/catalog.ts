// This process's view of the sales: cached sale + shard list per product, the round-robin shard
// counter, shards known empty, and the sold-out flag that lets a sold-out product be answered with
// no Redis round trip. Sale events on pub/sub invalidate a product; a lost subscription clears all.
import { isCluster, onMessage, type RedisClient, slotMapOf, subscribe } from '../redis/connection.ts';
import { parseSaleEvent } from './events.ts';
import { productOfChannel, saleEventsChannel } from './keys.ts';
import { loadSale, type Sale } from './sale.ts';

interface Entry {
  sale: Sale | null;
  loadedAt: number;
  soldOut: boolean;
  /** When the sold-out verdict was last reached, and until when an order re-checking it is out. */
  soldOutAt: number;
  recheckUntil: number;
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
  /** Products whose event channel this process listens on (subscribed when first found to exist). */
  private readonly subscribed = new Set<string>();
  /** Products this process has seen with a payment window (its expiry sweep looks after them). */
  private readonly timed = new Set<string>();

  /**
   * @param soldOutRecheckMs A sold-out verdict older than this lets one order re-read the shards
   *   (SOLD_OUT_RECHECK_MS; default 1000; 0: never).
   */
  constructor(
    private readonly redis: RedisClient,
    private readonly subscriber: RedisClient,
    private readonly soldOutRecheckMs = 1000,
  ) {}

  start(): Promise<void> {
    this.started ??= (async () => {
      onMessage(this.subscriber, (channel, message) => {
        const event = productOfChannel(channel) && parseSaleEvent(message);
        if (event) this.invalidate(event.productId);
      });
      let connectedOnce = false;
      this.subscriber.on('ready', () => {
        // Events sent while we were disconnected are lost; forget everything we cached.
        if (connectedOnce) this.entries.clear();
        connectedOnce = true;
      });
      // On a cluster a sharded subscription moves with its slot (failover, migration); events sent
      // while it moved are lost, so the cache is dropped whenever the cluster's nodes or slots change.
      if (isCluster(this.subscriber)) {
        const subscriber = this.subscriber;
        for (const event of ['+node', '-node']) subscriber.on(event, () => this.entries.clear());
        // A slot migration changes no node, only the map (re-read every few seconds).
        let map = slotMapOf(subscriber);
        subscriber.on('refresh', () => {
          const now = slotMapOf(subscriber);
          if (now !== map) this.entries.clear();
          map = now;
        });
      }
      if (this.subscriber.status === 'wait') await this.subscriber.connect();
    })();
    return this.started;
  }

  /** Products seen with a payment window (`paymentTimeoutSec` > 0) since this process started. */
  timedProducts(): string[] {
    return [...this.timed];
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

  /**
   * The sold-out verdict for an order about to be answered from it: true, unless the verdict is older
   * than the re-check bound and no other order is re-checking it; then this one order goes on to read
   * the shards (a missed "units back" event costs at most the bound), while the rest keep the fast path.
   */
  soldOutFor(productId: string): 'soldOut' | 'recheck' | 'selling' {
    const e = this.entries.get(productId);
    if (e?.soldOut !== true) return 'selling';
    if (this.soldOutStands(productId)) return 'soldOut';
    e.recheckUntil = Date.now() + this.soldOutRecheckMs;
    return 'recheck';
  }

  /**
   * True while the product's sold-out verdict stands without a re-check (soldOutFor would answer
   * 'soldOut'); unlike soldOutFor it hands out no re-check, so it may be asked before the order use case.
   */
  soldOutStands(productId: string): boolean {
    const e = this.entries.get(productId);
    if (e?.soldOut !== true) return false;
    const now = Date.now();
    const bound = this.soldOutRecheckMs;
    return bound === 0 || now - e.soldOutAt < bound || now < e.recheckUntil;
  }

  /** The sale as this process holds it, without loading it: undefined when not cached (or unknown). */
  cached(productId: string): Sale | undefined {
    return this.entries.get(productId)?.sale ?? undefined;
  }

  markSoldOut(sale: Sale): void {
    const e = this.entries.get(sale.productId);
    if (e?.sale?.generation !== sale.generation) return;
    e.soldOut = true;
    e.soldOutAt = Date.now();
    e.recheckUntil = 0;
  }

  /** An order found units after all (a re-check past a lost event): the verdict goes. */
  markSelling(productId: string): void {
    const e = this.entries.get(productId);
    if (e) e.soldOut = false;
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

  /**
   * Reads the sale; the first time it exists, subscribes to its events and reads it again, so that a
   * change announced before the subscription was live is in what gets cached. Unknown products get
   * no subscription (random ids must not grow this process's channels).
   */
  private async load(productId: string): Promise<Sale | null> {
    const sale = await loadSale(this.redis, productId);
    if (!sale || this.subscribed.has(productId)) return sale;
    await subscribe(this.subscriber, saleEventsChannel(productId));
    this.subscribed.add(productId);
    return loadSale(this.redis, productId);
  }

  private async entry(productId: string): Promise<Entry> {
    const cached = this.entries.get(productId);
    if (cached && (cached.sale || Date.now() - cached.loadedAt < UNKNOWN_TTL_MS)) return cached;
    let pending = this.loading.get(productId);
    if (!pending) {
      const epoch = this.epochs.get(productId);
      pending = this.load(productId)
        .then((sale) => {
          if (sale && sale.paymentTimeoutSec > 0) this.timed.add(productId);
          const entry: Entry = {
            sale,
            loadedAt: Date.now(),
            soldOut: false,
            soldOutAt: 0,
            recheckUntil: 0,
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
