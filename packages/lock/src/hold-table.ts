// Re-entry kept by the client, for backends with one key or node per waiting owner (etcd, ZooKeeper):
// an owner's first hold takes the lock on the server, nested ones only count, the last one releases.
import type { LockHandle } from './handle.ts';

/** One owner's hold of one lock on the server, shared by its nested handles. */
export interface ServerHold<K> {
  /** The backend's reference to its key or node. */
  readonly key: K;
  /** Fencing token of the hold (all nested handles show it). */
  readonly token: number;
  /** Live handles of this hold (re-entry count = their number). */
  readonly handles: Set<LockHandle>;
}

/** The server holds of one lock client, by lock name and owner. */
export class HoldTable<K> {
  private readonly holds = new Map<string, ServerHold<K>>();

  get(name: string, owner: string): ServerHold<K> | undefined {
    return this.holds.get(entry(name, owner));
  }

  add(name: string, owner: string, key: K, token: number): ServerHold<K> {
    const hold = { key, token, handles: new Set<LockHandle>() };
    this.holds.set(entry(name, owner), hold);
    return hold;
  }

  /** Forgets the hold (released, or lost on the server). */
  delete(name: string, owner: string, hold: ServerHold<K>): void {
    if (this.holds.get(entry(name, owner)) === hold) this.holds.delete(entry(name, owner));
  }

  values(): IterableIterator<ServerHold<K>> {
    return this.holds.values();
  }

  /** The hold a handle belongs to, if it is still live. */
  of(handle: LockHandle): ServerHold<K> | undefined {
    const hold = this.get(handle.name, handle.owner);
    return hold?.handles.has(handle) ? hold : undefined;
  }
}

function entry(name: string, owner: string): string {
  return `${name}\u0000${owner}`;
}
