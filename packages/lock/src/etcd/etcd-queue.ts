// The transactions of an EtcdLock's waiter queue (keys under `<prefix><name>/`, ordered by create
// revision), and the watch of a waiter's predecessor: what the lock recipe sends to etcd.
import type { Etcd3, ICompare, IKeyValue, Watcher } from 'etcd3';
import { wakeableSleep } from '../waiting.ts';
import type { EtcdKey } from './etcd-key.ts';

/** A waiter's view of the queue ahead of it: its predecessor, and whether that one is the head. */
export interface Ahead {
  predecessor: string | undefined;
  predecessorIsHead: boolean;
  /** The revision the view was read at: a watch from the next one misses no delete. */
  revision: number;
  /** False when our own key is gone (our lease lapsed while we waited). */
  mine: boolean;
}

/** A waiter's watch of its predecessor's delete. */
export interface PredecessorWatch {
  key: string;
  watcher: Watcher;
  deleted: boolean;
  wake: (() => void) | undefined;
}

const NUL = Buffer.from([0]);

/** The end of the range of every key starting with prefix (prefix with its last byte + 1). */
export function rangeEnd(prefix: string): Buffer {
  const end = Buffer.from(prefix);
  for (let i = end.length - 1; i >= 0; i--) {
    if ((end[i] as number) < 0xff) {
      end[i] = (end[i] as number) + 1;
      return end.subarray(0, i + 1);
    }
  }
  return NUL;
}

/** The request that reads every key of a queue, by create revision. */
function queueRange(prefix: string) {
  return {
    key: Buffer.from(prefix),
    range_end: rangeEnd(prefix),
    sort_target: 'Create' as const,
    keys_only: true,
  };
}

/**
 * One try: puts the owner's key only if the lock's queue (`prefix`) is empty (a compare over the
 * prefix's range, etcd 3.3+), so a busy lock costs one transaction and leaves nothing to delete.
 */
export async function putIfFree(
  etcd: Etcd3,
  prefix: string,
  key: string,
  leaseId: string,
  owner: string,
): Promise<number | null> {
  // etcd3's typings predate Compare.range_end; its protocol file has it (field 64).
  const empty = { key: Buffer.from(prefix), range_end: rangeEnd(prefix), target: 'Create', result: 'Equal' };
  const res = await etcd.kv.txn({
    compare: [{ ...empty, create_revision: 0 } as ICompare],
    success: [{ request_put: { key: Buffer.from(key), value: Buffer.from(owner), lease: leaseId } }],
    failure: [],
  });
  return res.succeeded ? Number(res.header.revision) : null;
}

/**
 * Puts the owner's key (on the lease) and reads the queue ahead of it, in one transaction. The
 * put's create revision is the transaction's revision.
 */
export async function putAndReadAhead(
  etcd: Etcd3,
  prefix: string,
  key: string,
  leaseId: string,
  owner: string,
): Promise<{ revision: number; ahead: Ahead }> {
  const res = await etcd.kv.txn({
    compare: [{ key: Buffer.from(key), target: 'Create', result: 'Equal', create_revision: 0 }],
    success: [
      { request_put: { key: Buffer.from(key), value: Buffer.from(owner), lease: leaseId } },
      { request_range: { ...queueRange(prefix), sort_order: 'Ascend' } },
    ],
    failure: [],
  });
  const revision = Number(res.header.revision);
  const kvs: IKeyValue[] = res.responses[1]?.response_range.kvs ?? [];
  const before = kvs.filter((kv) => Number(kv.create_revision) < revision);
  return {
    revision,
    ahead: {
      predecessor: before.at(-1)?.key.toString(),
      predecessorIsHead: before.length === 1,
      revision,
      mine: true,
    },
  };
}

/** Reads the queue ahead of our key again: the nearest older key, how many, and whether ours is there. */
export async function readAhead(etcd: Etcd3, prefix: string, mine: EtcdKey): Promise<Ahead> {
  const res = await etcd.kv.txn({
    compare: [],
    success: [
      {
        request_range: {
          ...queueRange(prefix),
          sort_order: 'Descend',
          limit: 1,
          max_create_revision: mine.revision - 1,
        },
      },
      { request_range: { key: Buffer.from(mine.key), keys_only: true } },
    ],
    failure: [],
  });
  const older = res.responses[0]?.response_range;
  const own = res.responses[1]?.response_range.kvs[0];
  return {
    predecessor: older?.kvs[0]?.key.toString(),
    predecessorIsHead: Number(older?.count ?? 0) === 1,
    revision: Number(res.header.revision),
    mine: own !== undefined && Number(own.create_revision) === mine.revision,
  };
}

/** Watches `key` for its delete from `fromRevision` (a delete between our read and the watch counts). */
export function watchDelete(etcd: Etcd3, key: string, fromRevision: number): PredecessorWatch {
  const watch: PredecessorWatch = {
    key,
    watcher: etcd.watch().key(key).startRevision(String(fromRevision)).only('delete').watcher(),
    deleted: false,
    wake: undefined,
  };
  watch.watcher.on('delete', () => {
    watch.deleted = true;
    watch.wake?.();
  });
  watch.watcher.on('error', () => {});
  return watch;
}

export function unwatch(watch: PredecessorWatch): void {
  watch.wake = undefined;
  watch.watcher.removeAllListeners('delete');
  watch.watcher.cancel().catch(() => {});
}

/** Resolves on the watched delete (at once if seen already) or after ms; rejects on abort. */
export async function nextEvent(watch: PredecessorWatch, ms: number, signal?: AbortSignal): Promise<void> {
  if (watch.deleted) return;
  try {
    await wakeableSleep(ms, signal, (wake) => {
      watch.wake = wake;
    });
  } finally {
    watch.wake = undefined;
  }
}
