// Owner identity per async call chain (Redisson uses the thread id): a nested withLock in the holder's
// chain re-enters, a parallel request does not; one owner per lock client and chain.

import { AsyncLocalStorage } from 'node:async_hooks';
import { randomUUID } from 'node:crypto';

const context = new AsyncLocalStorage<ReadonlyMap<string, string>>();
let sequence = 0;

/**
 * A lock client's id, the `<clientUuid>` of its owner ids `<clientUuid>:<n>` (Redisson's layout). Always
 * random, so two clients never share owner ids, wake channels or request ids: a `label` (the clientId
 * option) only prefixes it for whoever reads the keys.
 */
export function newClientId(label?: string): string {
  return label === undefined ? randomUUID() : `${label}-${randomUUID()}`;
}

export function newOwnerId(clientId: string): string {
  sequence = (sequence + 1) % Number.MAX_SAFE_INTEGER;
  return `${clientId}:${sequence}`;
}

/** The owner of the current call chain for this client, if the chain runs inside withOwner. */
export function currentOwner(clientId: string): string | undefined {
  return context.getStore()?.get(clientId);
}

export function withOwner<T>(clientId: string, owner: string, fn: () => T): T {
  const next = new Map(context.getStore());
  next.set(clientId, owner);
  return context.run(next, fn);
}
