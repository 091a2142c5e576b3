// Owner identity per async call chain (Redisson uses the thread id): a nested withLock in the holder's
// chain re-enters, a parallel request does not; one owner per lock client and chain.

import { AsyncLocalStorage } from 'node:async_hooks';
import { randomUUID } from 'node:crypto';

const context = new AsyncLocalStorage<ReadonlyMap<string, string>>();
let sequence = 0;
let requestSequence = 0;

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

/** A request id (unlock latches, wait ids) of the client, never given twice in this process. */
export function newRequestId(clientId: string): string {
  requestSequence = (requestSequence + 1) % Number.MAX_SAFE_INTEGER;
  return `${clientId}:${requestSequence}`;
}

/** The owner of the current call chain for this client, if the chain runs inside withOwner. */
export function currentOwner(clientId: string): string | undefined {
  return context.getStore()?.get(clientId);
}

/** withOwner scopes not yet settled; while there is none the context is disabled (see withOwner). */
let scopes = 0;

function scopeEnded(): void {
  scopes -= 1;
  if (scopes === 0) context.disable();
}

/**
 * Runs fn as `owner` of this client's locks (a nested withLock in its chain re-enters). The context
 * is enabled only while some scope runs: an enabled AsyncLocalStorage makes Node run a hook on every
 * promise of the process, which would tax every request (the order path too) forever after the first
 * admin change; so once the last scope settles it is disabled again, until the next one.
 */
export function withOwner<T>(clientId: string, owner: string, fn: () => T): T {
  const next = new Map(context.getStore());
  next.set(clientId, owner);
  scopes += 1;
  let result: T;
  try {
    result = context.run(next, fn);
  } catch (err) {
    scopeEnded();
    throw err;
  }
  if (result instanceof Promise) return result.finally(scopeEnded) as T;
  scopeEnded();
  return result;
}
