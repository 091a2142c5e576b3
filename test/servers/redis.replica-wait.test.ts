// ReplicaWait (grouped WAIT) against a real master and replica: a confirmed write is on the replica,
// concurrent callers share rounds, and a missing replica answers false once the timeout passes.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { commandStats } from '../../bench/lib/redis-info.ts';
import { until } from '../../harness/async.ts';
import { RedisServer } from '../../harness/redis-server.ts';
import { liveReplicas, ReplicaHealth } from '../../src/redis/replica-health.ts';
import { ReplicaWait } from '../../src/redis/replica-wait.ts';

describe('ReplicaWait: one marker + WAIT per master at a time, shared by everyone who asked before', () => {
  let master: RedisServer;
  let replica: RedisServer;
  before(async () => {
    master = await RedisServer.start();
    replica = await RedisServer.start();
    await replica.client().replicaof('127.0.0.1', master.port);
    await until('the replica in sync', async () =>
      (await replica.client().info('replication')).includes('master_link_status:up'),
    );
  });
  after(async () => {
    await replica?.stop();
    await master?.stop();
  });

  it('500 concurrent writers: each confirmed write is already on the replica, in far fewer WAITs', async () => {
    const writer = master.client();
    const onReplica = replica.client();
    const waits = new ReplicaWait(writer, 1, 5000);
    try {
      const before = (await commandStats(writer)).wait ?? 0;
      const results = await Promise.all(
        Array.from({ length: 500 }, async (_, i) => {
          await writer.set(`k${i}`, String(i));
          const confirmed = await waits.confirm('marker');
          // Read on the replica right after the confirmation: the write must be there.
          return { confirmed, seen: await onReplica.get(`k${i}`) };
        }),
      );
      for (const [i, r] of results.entries()) {
        assert.equal(r.confirmed, true);
        assert.equal(r.seen, String(i), `k${i} confirmed but not on the replica`);
      }
      const rounds = ((await commandStats(writer)).wait ?? 0) - before;
      assert.ok(rounds >= 1 && rounds < 500, `${rounds} WAITs for 500 writes`);
    } finally {
      waits.close();
    }
  });

  it('no replica to acknowledge: false after the timeout, and true again once it is back', async () => {
    const writer = master.client();
    const waits = new ReplicaWait(writer, 1, 200);
    try {
      await replica.client().replicaof('no', 'one');
      await until('the master sees no replica', async () =>
        (await writer.info('replication')).includes('connected_slaves:0'),
      );
      await writer.set('lonely', '1');
      assert.equal(await waits.confirm('marker'), false);
      await replica.client().replicaof('127.0.0.1', master.port);
      await until('the replica in sync again', async () =>
        (await replica.client().info('replication')).includes('master_link_status:up'),
      );
      // Back in sync, a round is confirmed again (a round may still time out while the replica catches up).
      await until('a round confirmed with the replica back', () => waits.confirm('marker'));
      assert.equal(await replica.client().get('lonely'), '1');
    } finally {
      waits.close();
    }
  });

  it('ReplicaHealth: a master is short once its replica is gone, or a WAIT failed, and not once it is back', async () => {
    const writer = master.client();
    const address = `127.0.0.1:${master.port}`;
    const changes: string[][] = [];
    const health = new ReplicaHealth(writer, 1, { intervalMs: 50, onChange: (short) => changes.push(short) });
    try {
      await until(
        'the probe sees the replica',
        () => health.shortMasters().length === 0 && !health.isShort(address),
      );
      // A failed WAIT marks the master at once; the next probe that finds the replica clears it.
      health.observeWait(address, false);
      assert.equal(health.isShort(address), true);
      await until('cleared by a probe', () => !health.isShort(address));
      await replica.client().replicaof('no', 'one');
      await until('short without its replica', () => health.isShort(address));
      assert.ok(liveReplicas(await writer.info('replication')) === 0);
      await replica.client().replicaof('127.0.0.1', master.port);
      await until('back with its replica in sync', () => !health.isShort(address), { timeoutMs: 60_000 });
      assert.deepEqual(changes.at(-1), [], 'the last change reported: no master short');
    } finally {
      health.close();
    }
  });
});
