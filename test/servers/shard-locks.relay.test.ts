// One process's shard hold on etcd and on ZooKeeper, shared by its orders (HoldRelay): orders that
// want the shard while it is in use share the hold, with its token, without a round trip; the hold
// serves at most MAX_USES of them and then goes back, so another process queued on the service gets
// the lock before this process's next order, whose token is newer again.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { track, until } from '../../harness/async.ts';
import { LOCK_SERVERS } from '../../harness/lock-servers.ts';
import {
  asEtcdAdmin,
  asZkAdmin,
  etcdPrefix,
  zkChildren,
} from '../../packages/lock/test/support/backend-admin.ts';
import { MAX_USES, type Turn } from '../../src/inventory/hold-relay.ts';
import { ExternalShardLocks } from '../../src/inventory/shard-locks.ts';

const LEASE = { leaseMs: 30_000 };

for (const backend of LOCK_SERVERS) {
  describe(`a shared shard hold on ${backend.name}`, () => {
    let server: Awaited<ReturnType<typeof backend.start>>;
    const clients: ExternalShardLocks[] = [];
    const connect = async () => {
      const config = {
        backend: backend.name,
        etcdEndpoints: [server.env.ETCD_ENDPOINTS ?? ''],
        zookeeperConnect: server.env.ZOOKEEPER_CONNECT ?? '',
      };
      const client = (await ExternalShardLocks.connect(config)) as ExternalShardLocks;
      clients.push(client);
      return client;
    };
    /** The lock's keys or nodes on the service: its holder and its queue. */
    const entries = (name: string): Promise<number> =>
      backend.name === 'etcd'
        ? asEtcdAdmin(server.env.ETCD_ENDPOINTS ?? '', async (etcd) =>
            etcd.getAll().prefix(etcdPrefix(name)).count(),
          )
        : asZkAdmin(server.env.ZOOKEEPER_CONNECT ?? '', async (zk) => (await zkChildren(zk, name)).length);

    before(async () => {
      server = await backend.start();
    });
    after(async () => {
      for (const c of clients) await c.close();
      await server.stop();
    });

    it(`serves at most ${MAX_USES} orders, then another process queued on the service goes first`, async () => {
      const name = `relay-${backend.name}`;
      const here = await connect();
      const other = await connect();
      const first = (await here.take(name, { waitMs: 0, ...LEASE })) as Turn;
      assert.ok(first, 'a free shard is had at once');
      const theirs = track(other.locks.acquire(name, { waitMs: 60_000, ...LEASE }));
      await until('the other process queued on the service', async () => (await entries(name)) === 2);
      const turns = [first];
      for (let i = 1; i < MAX_USES; i++) {
        const turn = await here.take(name, { waitMs: 0, ...LEASE });
        assert.ok(turn, `use ${i + 1} shares the hold in use`);
        assert.equal(turn.token, first.token);
        turns.push(turn);
      }
      assert.equal(await entries(name), 2, 'shared uses put nothing on the service');
      assert.equal(await here.take(name, { waitMs: 0, ...LEASE }), null, 'past the bound a try is busy');
      const next = track(here.take(name, { waitMs: 60_000, ...LEASE }));
      for (const turn of turns) turn.done();
      const hold = await theirs.promise;
      assert.ok(hold.token > first.token);
      assert.equal(next.settled(), false, 'this process waits behind the other');
      await hold.release();
      const again = (await next.promise) as Turn;
      assert.ok(again.token > hold.token, 'taken anew, with a newer token');
      again.done();
      await until('the lock free on the service', async () => (await entries(name)) === 0);
    });
  });
}
