// LockClient.runGuarded's round trip: acquire, the caller's commands and release queued on one
// pipeline, and the options and hold those commands see.
import type { LockCore } from './core.ts';
import type { AcquireOptions } from './front-end.ts';
import { isCluster } from './redis-client.ts';
import {
  type AcquireRequest,
  acquireInput,
  acquireScript,
  type LockPipeline,
  releaseInput,
  releaseScript,
} from './scripts.ts';

/** Options of runGuarded: an explicit lease is required (the hold is not renewed). */
export interface GuardedOptions extends AcquireOptions {
  leaseMs: number;
  /**
   * Whether the guarded commands' replies show their work done even though the acquire sent with
   * them failed. An idempotent script can answer so when ioredis re-sent a pipeline whose reply was
   * lost: the first send did the work under the lock, the re-sent acquire found the lock taken by
   * someone else since. Then runGuarded returns those replies instead of waiting for the lock.
   */
  settled?: (replies: unknown[]) => boolean;
}

/** What a guarded command sees: who holds the lock and, once known, the fencing token of the hold. */
export interface Hold {
  owner: string;
  /** null in the first, optimistic round trip: the guarded script reads the token from RedisClient. */
  token: number | null;
}

/** Queues the caller's commands on a pipeline, as `hold`. */
export type GuardedBuild = (pipeline: LockPipeline, hold: Hold) => void;

/** One guarded round trip of `hold.owner` on lock `name`. */
export interface GuardedTrip {
  name: string;
  leaseMs: number;
  hold: Hold;
  build: GuardedBuild;
  /** The acquire to send first (the optimistic round trip); absent when the lock is held already. */
  acquire?: AcquireRequest;
}

/**
 * Sends [acquire,] the caller's commands and the release in one pipeline; resolves to every reply in
 * order (the acquire's first, the release's last), throwing the first command error.
 */
export async function execGuarded(core: LockCore, trip: GuardedTrip): Promise<unknown[]> {
  const { name, leaseMs, hold } = trip;
  const pipeline = core.redis.pipeline();
  const requestId = core.nextRequestId();
  if (trip.acquire) acquireScript.run(pipeline, acquireInput({ ...trip.acquire, pairedRelease: requestId }));
  trip.build(pipeline, hold);
  releaseScript.run(
    pipeline,
    releaseInput({
      name,
      owner: hold.owner,
      leaseMs,
      mode: 'release',
      requestId,
      sharded: isCluster(core.redis),
      starvationMs: core.starvationMs,
    }),
  );
  // A command's error reply goes through call() too: a refusal for now (CLUSTERDOWN, READONLY, ...)
  // is the lock service unavailable, like a lost connection.
  return core.call(name, async () =>
    ((await pipeline.exec()) ?? []).map(([err, value]) => {
      if (err) throw err;
      return value;
    }),
  );
}
