// The lock service's own speed, beside the orders it serves: a plain try lock's take + give back (an
// etcd key put if absent and deleted, a ZooKeeper ephemeral node created and removed), one at a time
// (the take's latency) and in 8 loops at once (cycles/s: the most 8 shards' locks could change hands).
import { performance } from 'node:perf_hooks';
import { type Summary, summarize } from '../lib/stats.ts';
import { plainZooKeeperTryLock, type TryLock } from '../lock-adapters.ts';

export interface ServiceSpeed {
  /** The take alone (put / create), one at a time. */
  takeMs: Summary;
  /** Take + give back cycles per second, 8 loops on 8 names at once. */
  cyclesPerSec8: number;
}

/** A plain etcd try lock: the key put only if absent (one transaction), deleted to give it back. */
async function plainEtcdTryLock(endpoint: string): Promise<TryLock> {
  const { Etcd3 } = await import('etcd3');
  const etcd = new Etcd3({ hosts: endpoint });
  return {
    tryLock: async (name) => {
      const key = `bench-plain/${name}`;
      const res = await etcd.if(key, 'Create', '==', 0).then(etcd.put(key).value('1')).commit();
      return res.succeeded ? () => etcd.delete().key(key).exec() : null;
    },
    close: async () => etcd.close(),
  };
}

/** Measures `backend`'s server at `address` (an etcd endpoint or a ZooKeeper connect string). */
export async function probeLockService(
  backend: 'etcd' | 'zookeeper',
  address: string,
  iterations = 200,
): Promise<ServiceSpeed> {
  const lock = backend === 'etcd' ? await plainEtcdTryLock(address) : await plainZooKeeperTryLock(address);
  try {
    const cycle = async (name: string) => {
      const release = await lock.tryLock(name);
      if (!release) throw new Error(`${backend} probe: ${name} held`);
      await release();
    };
    await cycle('probe-warm');
    const takes: number[] = [];
    for (let i = 0; i < iterations; i++) {
      const t0 = performance.now();
      const release = await lock.tryLock('probe-alone');
      takes.push(performance.now() - t0);
      await release?.();
    }
    const t0 = performance.now();
    const per = Math.ceil(iterations / 8);
    await Promise.all(
      Array.from({ length: 8 }, async (_, k) => {
        for (let i = 0; i < per; i++) await cycle(`probe-${k}`);
      }),
    );
    return { takeMs: summarize(takes), cyclesPerSec8: (8 * per * 1000) / (performance.now() - t0) };
  } finally {
    await lock.close();
  }
}
