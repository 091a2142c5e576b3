// Records pub/sub messages on a private connection; flush() proves "nothing was published" without
// sleeping (a marker on its own channel arrives after everything published before it).
import { randomUUID } from 'node:crypto';
import type { Redis } from 'ioredis';
import { until } from '../../harness/async.ts';
import type { RedisServer } from '../../harness/redis-server.ts';

/** Subscribers of `channel` (PUBSUB NUMSUB). */
export async function numsub(redis: Redis, channel: string): Promise<number> {
  const [, n] = (await redis.pubsub('NUMSUB', channel)) as [string, number];
  return Number(n);
}

export interface Message {
  channel: string;
  message: string;
}

export class Recorder {
  readonly messages: Message[] = [];
  private readonly taken = new Map<string, number>();
  private readonly marker = `test:recorder:${randomUUID()}`;
  private waitingFor: { id: string; resolve: () => void } | undefined;

  private constructor(
    private readonly sub: Redis,
    private readonly pub: Redis,
  ) {
    sub.on('message', (channel: string, message: string) => {
      if (channel === this.marker) {
        if (this.waitingFor?.id === message) this.waitingFor.resolve();
        return;
      }
      this.messages.push({ channel, message });
    });
  }

  static async on(server: RedisServer, channels: string[]): Promise<Recorder> {
    const r = new Recorder(server.client(), server.client());
    await r.sub.subscribe(r.marker, ...channels);
    return r;
  }

  /** Messages received on `channel` so far. */
  on(channel: string): string[] {
    return this.messages.filter((m) => m.channel === channel).map((m) => m.message);
  }

  /** Resolves once every message published before this call has been received. */
  async flush(): Promise<Message[]> {
    const id = randomUUID();
    const seen = new Promise<void>((resolve) => {
      this.waitingFor = { id, resolve };
    });
    await this.pub.publish(this.marker, id);
    await seen;
    return this.messages;
  }

  /**
   * The next message on `channel` not yet taken by next() (it may have arrived already); fails after
   * timeoutMs without one.
   */
  async next(channel: string, timeoutMs = 10_000): Promise<string> {
    const index = this.taken.get(channel) ?? 0;
    const got = await until(`a message on ${channel}`, () => this.on(channel)[index], { timeoutMs });
    this.taken.set(channel, index + 1);
    return got;
  }

  async close(): Promise<void> {
    this.sub.disconnect();
    this.pub.disconnect();
  }
}
