// Client-side command accounting: counts every command any ioredis connection in this process sends
// (including SUBSCRIBE/UNSUBSCRIBE on subscriber connections and EVAL fallbacks after NOSCRIPT), by
// patching Redis.prototype.sendCommand once. Counting is off until start() and stops at stop().
import { type Command, Redis } from 'ioredis';

type SendCommand = (this: Redis, command: Command, stream?: unknown) => unknown;

export class CommandCounter {
  private counts: Record<string, number> = {};
  private excludedCounts: Record<string, number> = {};
  private active = false;
  private readonly seen = new WeakSet<Command>();

  /**
   * @param exclude commands for which this returns true are tallied separately (e.g. the benchmark's
   *   own bookkeeping), so they can be subtracted from server-side totals.
   */
  constructor(private readonly exclude: (command: Command) => boolean = () => false) {}

  /** Installs the hook (idempotent per process: the latest counter wins). */
  install(): this {
    const proto = Redis.prototype as unknown as { sendCommand: SendCommand; __benchOriginal?: SendCommand };
    proto.__benchOriginal ??= proto.sendCommand;
    const original = proto.__benchOriginal;
    const counter = this;
    proto.sendCommand = function (this: Redis, command: Command, stream?: unknown) {
      counter.observe(command);
      return original.call(this, command, stream);
    };
    return this;
  }

  start(): void {
    this.counts = {};
    this.excludedCounts = {};
    this.active = true;
  }

  stop(): { counted: Record<string, number>; excluded: Record<string, number> } {
    this.active = false;
    return { counted: { ...this.counts }, excluded: { ...this.excludedCounts } };
  }

  private observe(command: Command): void {
    // A command may pass through sendCommand again (offline queue flush, resend after reconnect).
    if (!this.active || this.seen.has(command)) return;
    this.seen.add(command);
    const target = this.exclude(command) ? this.excludedCounts : this.counts;
    target[command.name] = (target[command.name] ?? 0) + 1;
  }
}
