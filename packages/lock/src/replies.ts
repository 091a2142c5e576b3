// The lock scripts' reply codes as enums, their parsers, and the one place where a refusing reply
// becomes a typed error. Every script in scripts/*.lua answers in one of these forms.
import { type LockError, LockNotHeldError, LockUpgradeError } from './errors.ts';
import { replyInt } from './lua.ts';

/** acquire.lua's {code, pttl} when held: tokens start at 1, so 0 cannot be a token. */
export enum AcquireCode {
  /** The holder is one of ours: its release will hand the lock to our queue. */
  HeldByOurs = 0,
}

/** First element of a queued acquire's reply (fair-acquire.lua, rw-acquire.lua). */
export enum QueuedCode {
  /** {-1, 0, 0}: a read-lock holder asked for the write lock. */
  UpgradeRefused = -1,
  /** {0, blockedMs, wakeInMs}: queued. */
  Waiting = 0,
  /** {1, token, holdCount, grantedMs}. */
  Acquired = 1,
}

/** What every release script answers (release, fair-release, rw-release, redlock-release); nil: not held. */
export enum ReleaseCode {
  HoldsRemain = 0,
  Released = 1,
}

/** What renew.lua and rw-renew.lua answer. */
export enum RenewCode {
  /** The owner no longer holds the lock (or that hold). */
  Lost = 0,
  Renewed = 1,
}

/** Why a script refused a request; refusalError gives each its typed error. */
export enum Refusal {
  NotHeld = 'not_held',
  UpgradeRefused = 'upgrade_refused',
}

const REFUSAL_ERRORS: Record<Refusal, (lockName: string) => LockError> = {
  [Refusal.NotHeld]: (lockName) => new LockNotHeldError(lockName),
  [Refusal.UpgradeRefused]: (lockName) => new LockUpgradeError(lockName),
};

/** The typed error of a refusal, e.g. `throw refusalError(name, Refusal.NotHeld)`. */
export function refusalError(lockName: string, refusal: Refusal): LockError {
  return REFUSAL_ERRORS[refusal](lockName);
}

export type AcquireReply =
  | { acquired: true; token: number; holdCount: number }
  /** handOffExpected: the holder is one of ours, so its release will hand the lock to our queue. */
  | { acquired: false; pttl: number; handOffExpected: boolean };

/** acquire.lua and redlock-acquire.lua: {token, holdCount} | {AcquireCode.HeldByOurs, pttl} | pttl. */
export function parseAcquireReply(reply: unknown): AcquireReply {
  if (Array.isArray(reply)) {
    const first = replyInt(reply[0]);
    if (first === AcquireCode.HeldByOurs) {
      return { acquired: false, pttl: replyInt(reply[1]), handOffExpected: true };
    }
    return { acquired: true, token: first, holdCount: replyInt(reply[1]) };
  }
  return { acquired: false, pttl: replyInt(reply), handOffExpected: false };
}

/** null: not held by the owner (a nil reply; see `released`). */
export function parseReleaseReply(reply: unknown): ReleaseCode | null {
  if (reply === null || reply === undefined) return null;
  return replyInt(reply) === ReleaseCode.HoldsRemain ? ReleaseCode.HoldsRemain : ReleaseCode.Released;
}

/** A release's code; LockNotHeldError when the owner did not hold the lock. */
export function released(lockName: string, code: ReleaseCode | null): ReleaseCode {
  if (code === null) throw refusalError(lockName, Refusal.NotHeld);
  return code;
}

/** True when renewed, false when the owner no longer holds the lock. */
export function parseRenewReply(reply: unknown): boolean {
  return replyInt(reply) === RenewCode.Renewed;
}

export type QueuedReply =
  | { acquired: true; token: number; holdCount: number; grantedMs: number }
  | { acquired: false; blockedMs: number; wakeInMs: number }
  | { acquired: false; refused: Refusal };

/** fair-acquire.lua and rw-acquire.lua: {QueuedCode, ...} (see QueuedCode). */
export function parseQueuedReply(reply: unknown): QueuedReply {
  if (!Array.isArray(reply)) throw new TypeError(`unexpected lock reply ${String(reply)}`);
  const code = replyInt(reply[0]);
  if (code === QueuedCode.Acquired) {
    return {
      acquired: true,
      token: replyInt(reply[1]),
      holdCount: replyInt(reply[2]),
      grantedMs: replyInt(reply[3]),
    };
  }
  if (code === QueuedCode.UpgradeRefused) return { acquired: false, refused: Refusal.UpgradeRefused };
  return { acquired: false, blockedMs: replyInt(reply[1]), wakeInMs: replyInt(reply[2]) };
}

/** The owner's remaining lease from a pipeline's [HEXISTS lock owner, PTTL lock] replies; 0 if not held. */
export function ownerTtl(replies: [Error | null, unknown][] | null): number {
  const [held, pttl] = (replies ?? []).map(([, v]) => Number(v));
  return held === 1 && pttl !== undefined && pttl > 0 ? pttl : 0;
}
