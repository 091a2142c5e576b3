// One subscriber connection per lock client, shared by every lock it waits on. It carries two kinds
// of news: hand-offs (a release gave the lock to one of our waiters; told on this client's own
// channel, so only that process hears it) and Redisson's per-lock unlock channel (a foreign client,
// e.g. Java Redisson, released; we wake our oldest local waiter for that lock, never all of them).
import type { Redis } from 'ioredis';
import { lockKeys, wakeChannelPrefix } from './keys.ts';

export type WaitEvent = { kind: 'handoff'; token: number } | { kind: 'wake' } | { kind: 'timeout' };

export class Waiter {
  private handedToken: number | undefined;
  private woken = false;
  private notify: ((e: WaitEvent) => void) | undefined;

  constructor(
    readonly name: string,
    readonly owner: string,
  ) {}

  /** The lock was handed to this waiter (the wake message may beat the reply to its own attempt). */
  get handoffToken(): number | undefined {
    return this.handedToken;
  }

  handOff(token: number): void {
    this.handedToken = token;
    this.notify?.({ kind: 'handoff', token });
  }

  wake(): void {
    if (this.notify) this.notify({ kind: 'wake' });
    else this.woken = true;
  }

  /** Resolves on a hand-off, a wake-up or after timeoutMs; rejects with the signal's reason on abort. */
  next(timeoutMs: number, signal?: AbortSignal): Promise<WaitEvent> {
    if (this.handedToken !== undefined) return Promise.resolve({ kind: 'handoff', token: this.handedToken });
    if (this.woken) {
      this.woken = false;
      return Promise.resolve({ kind: 'wake' });
    }
    return new Promise<WaitEvent>((resolve, reject) => {
      const finish = () => {
        clearTimeout(timer);
        signal?.removeEventListener('abort', onAbort);
        this.notify = undefined;
      };
      const onAbort = () => {
        finish();
        reject(signal?.reason);
      };
      const timer = setTimeout(() => {
        finish();
        resolve({ kind: 'timeout' });
      }, timeoutMs);
      this.notify = (e) => {
        finish();
        resolve(e);
      };
      if (signal?.aborted) onAbort();
      else signal?.addEventListener('abort', onAbort, { once: true });
    });
  }
}

export class WakeHub {
  private readonly sub: Redis;
  private readonly wakeChannel: string;
  private readonly byOwner = new Map<string, Waiter>();
  /** Local waiters per lock name, oldest first (Set keeps insertion order). */
  private readonly byName = new Map<string, Set<Waiter>>();
  /** Redisson channel -> lock name, for the locks we currently listen on. */
  private readonly foreignChannels = new Map<string, string>();
  private ready: Promise<void> | undefined;
  private closed = false;

  constructor(redis: Redis, clientId: string, subscriber?: Redis) {
    this.wakeChannel = `${wakeChannelPrefix}${clientId}`;
    this.sub = subscriber ?? redis.duplicate({ lazyConnect: true });
    this.sub.on('error', () => {
      // Connection errors are retried by ioredis; waiters fall back to their PTTL timers meanwhile.
    });
    this.sub.on('message', (channel: string, message: string) => this.onMessage(channel, message));
    let connectedOnce = false;
    this.sub.on('ready', () => {
      // After a reconnect, messages sent while we were away are lost: every waiter asks again.
      if (connectedOnce) for (const w of this.byOwner.values()) w.wake();
      connectedOnce = true;
    });
  }

  /** Subscribes to this client's hand-off channel once; waiters register only after it is live. */
  start(): Promise<void> {
    this.ready ??= (async () => {
      if (this.sub.status === 'wait') await this.sub.connect();
      await this.sub.subscribe(this.wakeChannel);
    })();
    this.ready.catch(() => {
      this.ready = undefined;
    });
    return this.ready;
  }

  register(name: string, owner: string): Waiter {
    const w = new Waiter(name, owner);
    this.byOwner.set(waiterKey(name, owner), w);
    let set = this.byName.get(name);
    if (!set) {
      set = new Set();
      this.byName.set(name, set);
    }
    set.add(w);
    return w;
  }

  /**
   * Listens on the lock's Redisson channel while we have waiters for it. Returns true when this call
   * created the subscription: a release published before it was live was missed, so ask again now.
   */
  async watchForeign(name: string): Promise<boolean> {
    const channel = lockKeys(name).channel;
    if (this.foreignChannels.has(channel)) return false;
    this.foreignChannels.set(channel, name);
    try {
      await this.sub.subscribe(channel);
    } catch {
      this.foreignChannels.delete(channel);
      return false;
    }
    return true;
  }

  unregister(w: Waiter): void {
    this.byOwner.delete(waiterKey(w.name, w.owner));
    const set = this.byName.get(w.name);
    set?.delete(w);
    if (set && set.size === 0) {
      this.byName.delete(w.name);
      const channel = lockKeys(w.name).channel;
      if (this.foreignChannels.delete(channel) && !this.closed) {
        this.sub.unsubscribe(channel).catch(() => {});
      }
    }
  }

  async close(): Promise<void> {
    this.closed = true;
    for (const w of this.byOwner.values()) w.wake();
    this.sub.disconnect();
  }

  private onMessage(channel: string, message: string): void {
    if (channel === this.wakeChannel) {
      let parsed: unknown;
      try {
        parsed = JSON.parse(message);
      } catch {
        return;
      }
      if (!Array.isArray(parsed) || parsed.length !== 3) return;
      const [name, owner, token] = parsed as [string, string, number];
      this.byOwner.get(waiterKey(name, owner))?.handOff(Number(token));
      return;
    }
    const name = this.foreignChannels.get(channel);
    if (name === undefined) return;
    const oldest = this.byName.get(name)?.values().next().value;
    oldest?.wake();
  }
}

function waiterKey(name: string, owner: string): string {
  return `${name}\u0000${owner}`;
}
