// What a LockClient shares with the other lock kinds built on it (fair, read-write): its identity,
// its command connection with the scripts defined, its one subscriber (WakeHub) and its one batched
// watchdog. Package-internal; users hold a LockClient and pass it to the kinds' constructors.
import type { Redis } from 'ioredis';
import type { WakeHub } from './wake-hub.ts';
import type { Watchdog } from './watchdog.ts';

export interface LockCore {
  readonly clientId: string;
  readonly watchdogLeaseMs: number;
  readonly redis: Redis;
  readonly hub: WakeHub;
  readonly watchdog: Watchdog;
  /** Runs a Redis operation, turning connection failures into LockUnavailableError. */
  call<T>(name: string, op: () => Promise<T>): Promise<T>;
  /** A request id unique to this client (unlock latches). */
  nextRequestId(): string;
}
