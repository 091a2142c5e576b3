// The ZooKeeper lock backend (ZooKeeperLock) against a private ZooKeeper: the shared session-lock suite
// (counter, FIFO, re-entry, fencing across a re-created parent, kill -9, session loss, restart, abort).
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { until } from '../../../../harness/async.ts';
import { ZooKeeperServer } from '../../../../harness/zookeeper-server.ts';
import { LockAcquireTimeoutError, ZooKeeperLock } from '../../src/index.ts';
import type { Listed } from '../../src/zookeeper/zk-session.ts';
import { asZkAdmin, zkChildren, zkDeleteAll, zkParent } from '../support/backend-admin.ts';
import { sessionLockSuite, type TestLock } from '../support/session-lock-suite.ts';

sessionLockSuite<ZooKeeperServer>({
  name: 'zookeeper',
  start: () => ZooKeeperServer.start(),
  connect: async (server, ttlSeconds, onEvent) =>
    (await ZooKeeperLock.connect({
      connect: server.connectString,
      sessionTimeoutMs: ttlSeconds * 1000,
      heartbeatMs: 1000,
      ...(onEvent ? { onEvent } : {}),
    })) as unknown as TestLock,
  queued: (server, name) =>
    asZkAdmin(server.connectString, async (zk) => (await zkChildren(zk, name)).length),
  endpoint: (server) => server.connectString,
  deleteAll: (server, name) => zkDeleteAll(server.connectString, name),
  dropParent: (server, name) =>
    asZkAdmin(
      server.connectString,
      (zk) =>
        new Promise<void>((resolve, reject) =>
          zk.remove(zkParent(name), -1, (err) => (err ? reject(err) : resolve())),
        ),
    ),
});

describe('zookeeper: a wait whose first read of the queue goes unanswered', () => {
  let server: ZooKeeperServer;
  const locks: ZooKeeperLock[] = [];
  const connect = async () => {
    const lock = await ZooKeeperLock.connect({
      connect: server.connectString,
      sessionTimeoutMs: 30_000,
      heartbeatMs: 1000,
    });
    locks.push(lock);
    return lock;
  };
  const nodes = (name: string) =>
    asZkAdmin(server.connectString, async (zk) => (await zkChildren(zk, name)).length);

  before(async () => {
    server = await ZooKeeperServer.start();
  });
  after(async () => {
    server.resume();
    for (const lock of locks) await lock.close();
    await server.stop();
  });

  it('times out at its deadline (the node was created: not unavailable), and its node goes once ZooKeeper answers', async () => {
    const name = 'first-read-unanswered';
    const held = await (await connect()).acquire(name);
    const waiter = await connect();
    // ZooKeeper stops answering right after the waiter's node is created, before the read of the
    // queue sent behind the create is answered (its answer, had it come, is not used): the window a
    // pause in the shared suite's test only sometimes hits.
    const session = (waiter as unknown as { session: { createListed: Create } }).session;
    const create = session.createListed.bind(session);
    session.createListed = async (parent, prefix) => {
      const made = await create(parent, prefix);
      server.pause();
      return { ...made, children: new Promise<string[]>(() => {}) };
    };
    try {
      await assert.rejects(waiter.acquire(name, { waitMs: 300 }), LockAcquireTimeoutError);
    } finally {
      server.resume();
    }
    await until('the waiter’s node removed', async () => (await nodes(name)) === 1);
    await held.release();
    await until('the lock free', async () => (await nodes(name)) === 0);
  });
});

type Create = (parent: string, prefix: string) => Promise<Listed>;
