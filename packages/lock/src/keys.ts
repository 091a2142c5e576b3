// Names of the keys and channels derived from a lock name. Redisson's rule: `prefix:{name}` when the
// name has no brace, `prefix:name` when it has one, so every derived key shares the lock's cluster slot.

export function prefixName(prefix: string, name: string): string {
  return name.includes('{') ? `${prefix}:${name}` : `${prefix}:{${name}}`;
}

const RECENT_NAMES = 1024;
const recent = new Map<string, LockKeys>();

/** The keys of a lock name; those of recently used names are kept, as a hot lock asks on every call. */
export function lockKeys(name: string): LockKeys {
  let keys = recent.get(name);
  if (keys === undefined) {
    // Bounded: when full, start over rather than track use (a flash sale has a few hot names).
    if (recent.size >= RECENT_NAMES) recent.clear();
    keys = deriveKeys(name);
    recent.set(name, keys);
  }
  return keys;
}

export type LockKeys = ReturnType<typeof deriveKeys>;

function deriveKeys(name: string) {
  const latch = prefixName('redisson_unlock_latch', name);
  return {
    lock: name,
    /** Redisson's unlock channel; Java Redisson waiters subscribe to it. */
    channel: prefixName('redisson_lock__channel', name),
    token: prefixName('flashsale_lock__token', name),
    queue: prefixName('flashsale_lock__queue', name),
    ours: prefixName('flashsale_lock__ours', name),
    latch: (requestId: string) => `${latch}:${requestId}`,
  };
}

/** Channel on which a client is told that a lock was handed to one of its waiters. */
export const wakeChannelPrefix = 'flashsale_lock__wake:';

/**
 * The keys every queued lock kind shares: the reentrant lock's hash (Redisson layout), channel, token
 * counter and latch, and a waiter queue of its own kind (`flashsale_<kind>__queue` ...).
 */
function queuedKeys(kind: string, name: string) {
  const k = lockKeys(name);
  return {
    lock: name,
    channel: k.channel,
    token: k.token,
    queue: prefixName(`flashsale_${kind}__queue`, name),
    deadlines: prefixName(`flashsale_${kind}__deadlines`, name),
    waiters: prefixName(`flashsale_${kind}__waiters`, name),
    latch: k.latch,
  };
}

/** Keys of the fair lock: the lock itself is the reentrant lock's hash (Redisson layout). */
export function fairKeys(name: string) {
  return queuedKeys('fair', name);
}

/** Keys of the read-write lock: the lock hash (mode, counts) and the per-hold lapse times. */
export function rwKeys(name: string) {
  return { ...queuedKeys('rw', name), holds: prefixName('flashsale_rw__holds', name) };
}

/** Per-master keys of the multi-master lock: the reentrant lock's hash, plus its waiter queue. */
export function redlockKeys(name: string) {
  return { ...queuedKeys('redlock', name), reservation: prefixName('flashsale_redlock__reserved', name) };
}
