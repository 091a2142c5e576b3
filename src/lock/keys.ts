// Names of the keys and channels derived from a lock name. Redisson's rule: `prefix:{name}` when the
// name has no brace, `prefix:name` when it has one, so every derived key shares the lock's cluster slot.

export function prefixName(prefix: string, name: string): string {
  return name.includes('{') ? `${prefix}:${name}` : `${prefix}:{${name}}`;
}

export function lockKeys(name: string) {
  return {
    lock: name,
    /** Redisson's unlock channel; Java Redisson waiters subscribe to it. */
    channel: prefixName('redisson_lock__channel', name),
    token: prefixName('flashsale_lock__token', name),
    queue: prefixName('flashsale_lock__queue', name),
    waiters: prefixName('flashsale_lock__waiters', name),
    latch: (requestId: string) => `${prefixName('redisson_unlock_latch', name)}:${requestId}`,
  };
}

/** Channel on which a client is told that a lock was handed to one of its waiters. */
export const wakeChannelPrefix = 'flashsale_lock__wake:';
