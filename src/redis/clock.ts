// Redis server time, as seen from this process. Deadlines that scripts enforce (an order attempt's
// fence in reserve.lua) are compared with the server's clock, so they are written in server time:
// `now()` estimates it without a round trip (local clock + an offset measured with TIME and
// refreshed in the background), `serverNow()` asks. An error in the estimate only shifts how long
// an attempt may take; whether a deadline has passed is always decided by asking the server.
import { setTimeout as sleep } from 'node:timers/promises';
import type { RedisClient } from './connection.ts';

/**
 * How often the offset is measured again (one TIME a second). Clocks drift and get stepped (NTP), the
 * server's too: while the estimate lags a forward step of Redis' clock by more than a reservation's
 * send margin (SEND_LEASE_MS, 1 s), every reservation arrives "late" and its order is answered 429
 * busy; at 10 s a 3 s step stopped the sale for up to 10 s (test/partitions scenario c).
 */
const REFRESH_MS = 1000;

export class RedisClock {
  private offset = 0;
  private timer: NodeJS.Timeout | undefined;

  constructor(private readonly redis: RedisClient) {}

  /** Measures the offset once, then keeps it fresh until stop(). */
  async start(): Promise<this> {
    await this.sync();
    this.timer = setInterval(() => {
      this.sync().catch(() => {
        // Redis unreachable: keep the last offset; the next tick measures again.
      });
    }, REFRESH_MS);
    this.timer.unref();
    return this;
  }

  stop(): void {
    clearInterval(this.timer);
  }

  /** Estimated server time in ms. */
  now(): number {
    return Date.now() + this.offset;
  }

  /** Server time in ms, asked of the server. */
  async serverNow(): Promise<number> {
    const [seconds, micros] = await this.redis.time();
    return Number(seconds) * 1000 + Math.floor(Number(micros) / 1000);
  }

  /** Resolves once the server's clock has passed `ms`. RedisClient errors propagate. */
  async waitPast(ms: number): Promise<void> {
    for (;;) {
      const left = ms - (await this.serverNow());
      if (left < 0) return;
      await sleep(left + 1);
    }
  }

  private async sync(): Promise<void> {
    const before = Date.now();
    const server = await this.serverNow();
    const after = Date.now();
    this.offset = server - Math.round((before + after) / 2);
  }
}
