// A child process that takes a lock on etcd or ZooKeeper and holds it until killed (kill -9 tests):
// argv backend, endpoint, lock name, lease seconds; prints `held <token>` once it holds the lock.
import { EtcdLock, ZooKeeperLock } from '../../src/index.ts';

const [backend, endpoint = '', name = 'lock', ttl = '2'] = process.argv.slice(2);
const locks =
  backend === 'etcd'
    ? await EtcdLock.connect({ endpoints: endpoint, leaseTtlSeconds: Number(ttl) })
    : await ZooKeeperLock.connect({ connect: endpoint, sessionTimeoutMs: Number(ttl) * 1000 });
const handle = await locks.acquire(name, { waitMs: 60_000 });
process.stdout.write(`held ${handle.token}\n`);
setInterval(() => {}, 60_000);
