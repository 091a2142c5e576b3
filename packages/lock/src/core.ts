// What a LockClient shares with the lock kinds built on it (fair, read-write): identity, command
// connection, subscriber and watchdog. Package-internal: users pass the LockClient itself.
import type { LockEventObserver } from './front-end.ts';
import type { RedisClient } from './redis-client.ts';
import type { WakeHub } from './wake-hub.ts';
import type { Watchdog } from './watchdog.ts';

export interface LockCore {
  readonly clientId: string;
  readonly watchdogLeaseMs: number;
  /** The reentrant lock's starvation bound (see LockClientOptions.starvationMs). */
  readonly starvationMs: number;
  readonly redis: RedisClient;
  readonly hub: WakeHub;
  readonly watchdog: Watchdog;
  /** The client's event observer: the kinds built on it report to it too. */
  readonly onEvent: LockEventObserver | undefined;
  /** Runs a RedisClient operation, turning connection failures into LockUnavailableError. */
  call<T>(name: string, op: () => Promise<T>): Promise<T>;
  /** A request id unique to this client (unlock latches). */
  nextRequestId(): string;
}
