// Admin access to a private etcd or ZooKeeper behind the locks' backs: count and delete a lock's keys
// or nodes (an operator's mistake), used by the backends' suites and the conformance suite.
import { Etcd3 } from 'etcd3';
import zookeeper from 'node-zookeeper-client';

/** The etcd prefix and ZooKeeper parent of a lock (the backends' defaults). */
export const etcdPrefix = (name: string) => `flashsale-lock/${name}/`;
export const zkParent = (name: string) => `/flashsale-lock/${name}`;

/** Runs fn on an etcd client of its own, closed after. */
export async function asEtcdAdmin<T>(endpoint: string, fn: (etcd: Etcd3) => Promise<T>): Promise<T> {
  const etcd = new Etcd3({ hosts: endpoint });
  try {
    return await fn(etcd);
  } finally {
    etcd.close();
  }
}

/** Deletes every key of the etcd lock `name`: its holder and its waiters. */
export function etcdDeleteAll(endpoint: string, name: string): Promise<void> {
  return asEtcdAdmin(endpoint, async (etcd) => {
    await etcd.delete().prefix(etcdPrefix(name));
  });
}

/**
 * Runs fn on a ZooKeeper session of its own, closed after: a session of node-zookeeper-client that
 * lived through a server restart may hang in its handshake (ZooKeeperLock guards its own sessions
 * against that; a test's plain client would not be).
 */
export async function asZkAdmin<T>(connect: string, fn: (zk: zookeeper.Client) => Promise<T>): Promise<T> {
  const zk = zookeeper.createClient(connect, { sessionTimeout: 10_000, spinDelay: 100 });
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

/** The children of a ZooKeeper lock's parent (none when the parent does not exist). */
export function zkChildren(zk: zookeeper.Client, name: string): Promise<string[]> {
  return new Promise((resolve, reject) =>
    zk.getChildren(zkParent(name), undefined, (err, children) => {
      if (err && (err as zookeeper.Exception).getCode?.() === zookeeper.Exception.NO_NODE) resolve([]);
      else if (err) reject(err);
      else resolve(children);
    }),
  );
}

/** Deletes every node of the ZooKeeper lock `name`: its holder and its waiters. */
export function zkDeleteAll(connect: string, name: string): Promise<void> {
  return asZkAdmin(connect, async (zk) => {
    for (const child of await zkChildren(zk, name)) {
      await new Promise<void>((resolve, reject) =>
        zk.remove(`${zkParent(name)}/${child}`, -1, (err) => (err ? reject(err) : resolve())),
      );
    }
  });
}
