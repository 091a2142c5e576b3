// One subscriber connection per lock client, shared by every lock it waits on: hand-offs and hints on
// the client's own wake channel, and Redisson's per-lock unlock channel for foreign releases.
//
// On a Redis Cluster the unlock channel is sharded (SSUBSCRIBE, as Redisson 3.22+ does), while the
// wake channel stays a classic one: a release script PUBLISHes to a waiter's client, whose channel
// is in no particular slot, and a script may only SPUBLISH within its keys' slot.

import { lockKeys, wakeChannelPrefix } from './keys.ts';
import {
  duplicateClient,
  isCluster,
  onMessage,
  type RedisClient,
  subscribe,
  unsubscribe,
} from './redis-client.ts';

export type WaitEvent =
  | { kind: 'handoff'; token: number; grantedMs?: number }
  | { kind: 'head'; blockedMs: number }
  | { kind: 'wake' }
  | { kind: 'timeout' };

export class Waiter {
  private handedToken: number | undefined;
  private grantedMs: number | undefined;
  private hintMs: number | undefined;
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

  handOff(token: number, grantedMs?: number): void {
    this.handedToken = token;
    this.grantedMs = grantedMs;
    this.notify?.(this.handoffEvent(token));
  }

  /** A hand-off turned out void (its grant lapsed before it could be confirmed): wait on. */
  clearHandoff(): void {
    this.handedToken = undefined;
    this.grantedMs = undefined;
  }

  /** This waiter became the head of its queue; what blocks it may lapse within blockedMs. */
  hint(blockedMs: number): void {
    if (this.notify) this.notify({ kind: 'head', blockedMs });
    else this.hintMs = Math.min(this.hintMs ?? blockedMs, blockedMs);
  }

  wake(): void {
    if (this.notify) this.notify({ kind: 'wake' });
    else this.woken = true;
  }

  /** Resolves on a hand-off, a wake-up or after timeoutMs; rejects with the signal's reason on abort. */
  next(timeoutMs: number, signal?: AbortSignal): Promise<WaitEvent> {
    if (this.handedToken !== undefined) return Promise.resolve(this.handoffEvent(this.handedToken));
    if (this.hintMs !== undefined) {
      const blockedMs = this.hintMs;
      this.hintMs = undefined;
      return Promise.resolve({ kind: 'head', blockedMs });
    }
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

  private handoffEvent(token: number): WaitEvent {
    return this.grantedMs === undefined
      ? { kind: 'handoff', token }
      : { kind: 'handoff', token, grantedMs: this.grantedMs };
  }
}

export class WakeHub {
  private readonly sub: RedisClient;
  private readonly wakeChannel: string;
  private readonly byOwner = new Map<string, Waiter>();
  /** Local waiters per lock name, oldest first (Set keeps insertion order). */
  private readonly byName = new Map<string, Set<Waiter>>();
  /** Redisson channel -> lock name, for the locks we currently listen on. */
  private readonly foreignChannels = new Map<string, string>();
  private ready: Promise<void> | undefined;
  private closed = false;

  constructor(redis: RedisClient, clientId: string, subscriber?: RedisClient) {
    this.wakeChannel = `${wakeChannelPrefix}${clientId}`;
    // Our own subscriber resubscribes itself after a reconnect: ioredis's automatic resubscription
    // leaves its SUBSCRIBE promise unhandled, which rejects if the connection closes before the reply.
    const own = subscriber === undefined;
    this.sub = subscriber ?? duplicateClient(redis, { lazyConnect: true, autoResubscribe: false });
    this.sub.on('error', () => {
      // Connection errors are retried by ioredis; waiters fall back to their PTTL timers meanwhile.
    });
    this.sub.on('message', (channel: string, message: string) => this.onMessage(channel, message));
    if (isCluster(this.sub)) onMessage(this.sub, (channel, message) => this.onMessage(channel, message));
    let connectedOnce = false;
    this.sub.on('ready', () => {
      if (!connectedOnce) {
        connectedOnce = true;
        return;
      }
      // After a reconnect, messages sent while we were away are lost: every waiter asks again, once
      // the subscriptions are back.
      const wake = own && this.ready ? [this.sub.subscribe(this.wakeChannel)] : [];
      // One call per channel: on a cluster each is in its own slot.
      const foreign = own
        ? [...this.foreignChannels.keys()].map((channel) => subscribe(this.sub, channel))
        : [];
      const resubscribed = Promise.all([...wake, ...foreign]).catch(() => {});
      void resubscribed.then(() => {
        for (const w of this.byOwner.values()) w.wake();
      });
    });
  }

  /** True once the hand-off channel is live (lets the hot path skip awaiting start()). */
  started = false;

  /** Subscribes to this client's hand-off channel once; waiters register only after it is live. */
  start(): Promise<void> {
    this.ready ??= (async () => {
      if (this.sub.status === 'wait') await this.sub.connect();
      await this.sub.subscribe(this.wakeChannel);
      this.started = true;
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
      await subscribe(this.sub, channel);
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
        unsubscribe(this.sub, channel).catch(() => {});
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
      // [name, owner, token]: hand-off (reentrant lock); [name, owner, token, grantedMs]: grant (fair,
      // read-write); [name, owner, "head", blockedMs]: timer hint for a new queue head.
      if (!Array.isArray(parsed) || (parsed.length !== 3 && parsed.length !== 4)) return;
      const [name, owner, token, extra] = parsed as [string, string, number | string, number?];
      const waiter = this.byOwner.get(waiterKey(name, owner));
      if (token === 'head') waiter?.hint(Number(extra));
      else waiter?.handOff(Number(token), extra === undefined ? undefined : Number(extra));
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
