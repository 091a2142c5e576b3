// The ZooKeeper lock backend (ZooKeeperLock) against a private ZooKeeper: the shared session-lock suite
// (counter, FIFO, re-entry, fencing across a re-created parent, kill -9, session loss, restart, abort).
import zookeeper from 'node-zookeeper-client';
import { ZooKeeperServer } from '../../../../test/support/zookeeper-server.ts';
import { ZooKeeperLock } from '../../src/index.ts';
import { sessionLockSuite, type TestLock } from '../support/session-lock-suite.ts';

/**
 * Runs fn on a session of its own, closed after: the suite restarts the server, and a session of
 * node-zookeeper-client that lived through the restart may hang in its handshake (ZooKeeperLock
 * guards its own sessions against that; a test's plain client would not be).
 */
async function asAdmin<T>(server: ZooKeeperServer, fn: (zk: zookeeper.Client) => Promise<T>): Promise<T> {
  const zk = zookeeper.createClient(server.connectString, { sessionTimeout: 10_000, spinDelay: 100 });
  await new Promise<void>((resolve) => {
    zk.once('connected', () => resolve());
    zk.connect();
  });
  try {
    return await fn(zk);
  } finally {
    zk.close();
  }
}

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
    asAdmin(
      server,
      (zk) =>
        new Promise((resolve, reject) =>
          zk.getChildren(`/flashsale-lock/${name}`, undefined, (err, children) => {
            if (err && (err as zookeeper.Exception).getCode?.() === zookeeper.Exception.NO_NODE) resolve(0);
            else if (err) reject(err);
            else resolve(children.length);
          }),
        ),
    ),
  endpoint: (server) => server.connectString,
  deleteAll: (server, name) =>
    asAdmin(server, async (zk) => {
      const parent = `/flashsale-lock/${name}`;
      const children = await new Promise<string[]>((resolve, reject) =>
        zk.getChildren(parent, undefined, (err, list) => (err ? reject(err) : resolve(list))),
      );
      for (const child of children) {
        await new Promise<void>((resolve, reject) =>
          zk.remove(`${parent}/${child}`, -1, (err) => (err ? reject(err) : resolve())),
        );
      }
    }),
  dropParent: (server, name) =>
    asAdmin(
      server,
      (zk) =>
        new Promise<void>((resolve, reject) =>
          zk.remove(`/flashsale-lock/${name}`, -1, (err) => (err ? reject(err) : resolve())),
        ),
    ),
});
