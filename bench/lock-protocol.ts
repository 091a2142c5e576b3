// Messages between bench/locks.ts (parent) and bench/lock-contender.ts (children), and the keys the
// benchmark itself touches inside the critical section (its bookkeeping, excluded from command counts).
import type { LibName, LockServers } from './lock-adapters.ts';

/** Prefix of every key the benchmark's own critical-section commands touch. */
export const BOOKKEEPING_PREFIX = 'benchbk:';
/** INCR on entry / DECR before release: a holder that reads anything but 1 overlapped another. */
export const INSIDE_KEY = `${BOOKKEEPING_PREFIX}inside`;
/** INCR inside the critical section: the true global order of acquisitions. */
export const SEQ_KEY = `${BOOKKEEPING_PREFIX}seq`;

export interface SetupMessage {
  type: 'setup';
  lib: LibName;
  url: string;
  lockName: string;
  pauseMs: number;
  /** Global ids of the contenders this process runs (one connection each). */
  contenders: number[];
  /** For the etcd and ZooKeeper libraries; the benchmark's own INCRs still go to Redis at url. */
  servers?: LockServers | undefined;
}

export interface GoMessage {
  type: 'go';
  /** Epoch ms at which every contender starts, and after which nothing new is counted. */
  startAt: number;
  deadline: number;
  /** Longest the child waits for in-flight acquisitions after the deadline before disconnecting. */
  drainMs: number;
}

/** After the parent has sampled the server's counters: close every connection of the phase. */
export interface TeardownMessage {
  type: 'teardown';
}

export type ParentMessage = SetupMessage | GoMessage | TeardownMessage;

export interface HelloMessage {
  type: 'hello';
  pid: number;
}

export interface ReadyMessage {
  type: 'ready';
  settings: Record<string, unknown>;
}

export interface ContenderStats {
  id: number;
  /** Acquisitions completed inside the window. */
  acquisitions: number;
  /** Acquire calls that gave up by themselves inside the window (timeout / retry budget). */
  gaveUp: number;
  /** Acquire or release calls that failed with any other error inside the window. */
  errors: number;
  /** Longest time from wanting the lock to holding it, failed attempts included; a wait still open at the deadline counts up to the deadline. */
  maxWaitMs: number;
}

export interface ResultMessage {
  type: 'result';
  contenders: ContenderStats[];
  /** One entry per acquisition inside the window, as parallel arrays. */
  seq: number[];
  who: number[];
  /** Duration of the acquire call that succeeded (ms). */
  latencyMs: number[];
  /** From wanting the lock to holding it, failed attempts included (ms). */
  waitMs: number[];
  /** When the acquire call returned, and when release was called (epoch ms with sub-ms precision). */
  acquiredAt: number[];
  releasedAt: number[];
  /** Entries into the critical section that found another holder inside (any time, window or not). */
  overlaps: number;
  /** Commands the clients sent inside the window, by name, the benchmark's bookkeeping excluded. */
  clientCommands: Record<string, number>;
  /** The benchmark's own commands inside the window, by name. */
  bookkeepingCommands: Record<string, number>;
  /** CPU time (user + system) this process used inside the window, ms. */
  cpuMs: number;
  /** A few distinct error messages, for the report. */
  errorSamples: string[];
  /** Time from the deadline until every contender had stopped (ms), and whether the drain timed out. */
  drainMs: number;
  drainTimedOut: boolean;
}

export interface FatalMessage {
  type: 'fatal';
  message: string;
}

export interface ClosedMessage {
  type: 'closed';
}

export type ChildMessage = HelloMessage | ReadyMessage | ResultMessage | ClosedMessage | FatalMessage;
