// The ZooKeeper lock backend (ZooKeeperLock) against a private ZooKeeper: the shared session-lock suite
// (counter, FIFO, re-entry, fencing across a re-created parent, kill -9, session loss, restart, abort).
import { ZooKeeperServer } from '../../../../test/support/zookeeper-server.ts';
import { ZooKeeperLock } from '../../src/index.ts';
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
